/* CPU-bound: an xorshift/multiply hash chain in registers, no memory traffic.
 * Build: gcc -O2 -o cpuloop cpuloop.c.  Run: ./cpuloop [iterations]
 * Prints "time_s: T" and the final hash (so the loop cannot be optimised away).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
    long iters = argc > 1 ? atol(argv[1]) : 30L * 1000 * 1000;
    if (iters < 1) {
        fprintf(stderr, "usage: %s [iterations>=1]\n", argv[0]);
        return 2;
    }
    unsigned long long h = 0x9E3779B97F4A7C15ULL;
    double t0 = now();
    for (long i = 0; i < iters; i++) {
        h ^= h << 13;
        h ^= h >> 7;
        h ^= h << 17;
        h *= 0xff51afd7ed558ccdULL;
    }
    double t = now() - t0;
    printf("iterations: %ld\ntime_s: %.6f\nhash: %llu\n", iters, t, h);
    return 0;
}
