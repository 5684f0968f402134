// Google Benchmark fixture source: two tiny loops.
#include <benchmark/benchmark.h>
#include <numeric>
#include <vector>

static void BM_Sum(benchmark::State& state) {
  std::vector<int> v(state.range(0), 1);
  for (auto _ : state) benchmark::DoNotOptimize(std::accumulate(v.begin(), v.end(), 0));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_Sum)->Arg(64)->Arg(4096);

static void BM_StringCopy(benchmark::State& state) {
  std::string x = "hello";
  for (auto _ : state) { std::string copy(x); benchmark::DoNotOptimize(copy); }
}
BENCHMARK(BM_StringCopy);
BENCHMARK_MAIN();
