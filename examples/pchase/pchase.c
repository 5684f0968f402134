/* Pointer chasing over a random cyclic permutation: every load depends on the previous one and misses
 * the caches, so the time follows memory latency (not bandwidth, not compute).
 * Build: gcc -O2 -o pchase pchase.c.  Run: ./pchase [steps] [elements]
 * Default 8 Mi slots of 8 bytes (64 MiB, twice a 32 MiB L3), 512 Ki dependent loads.
 * Prints "time_s: T" (chase only; building the permutation is excluded) and the final index.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static unsigned long long rng = 88172645463325252ULL;
static unsigned long long xorshift(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int main(int argc, char **argv) {
    long steps = argc > 1 ? atol(argv[1]) : 512L * 1024;
    long n = argc > 2 ? atol(argv[2]) : 8L * 1024 * 1024;
    if (steps < 1 || n < 2) {
        fprintf(stderr, "usage: %s [steps>=1] [elements>=2]\n", argv[0]);
        return 2;
    }
    long *next = malloc(n * sizeof *next), *order = malloc(n * sizeof *order);
    if (!next || !order) {
        fprintf(stderr, "out of memory for %ld slots\n", n);
        return 1;
    }
    for (long i = 0; i < n; i++)
        order[i] = i;
    for (long i = n - 1; i > 0; i--) { /* Fisher-Yates: one random cycle through every slot */
        long j = (long)(xorshift() % (unsigned long long)(i + 1));
        long tmp = order[i];
        order[i] = order[j];
        order[j] = tmp;
    }
    for (long i = 0; i < n; i++)
        next[order[i]] = order[(i + 1) % n];
    free(order);
    long p = 0;
    double t0 = now();
    for (long s = 0; s < steps; s++)
        p = next[p];
    double t = now() - t0;
    printf("steps: %ld\nelements: %ld\ntime_s: %.6f\nend: %ld\n", steps, n, t, p);
    free(next);
    return 0;
}
