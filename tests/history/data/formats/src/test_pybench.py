"""pytest-benchmark fixture source: two tiny functions."""


def test_sum(benchmark):
    benchmark(sum, range(1000))


def test_sorted(benchmark):
    benchmark(sorted, list(range(500, 0, -1)))
