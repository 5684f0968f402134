/* STREAM-like "add" kernel with NADDS dependent additions per element (the quiho paper's STREAM-NADDS).
 *
 *   a[i] = b[i] + c[i] + s + s + ...   (NADDS additions per element, a dependent chain)
 *
 * Three arrays of N doubles (default 8 Mi elements = 64 MiB each, 192 MiB in all: six times a 32 MiB L3),
 * so with NADDS=1 every pass streams memory and the time follows memory bandwidth; with NADDS=30 the
 * dependent floating-point chain costs more than the memory traffic and the time follows the CPU.
 * Build: gcc -O2 -DNADDS=30 -o stream-nadds30 stream.c.  Run: ./stream-nadds30 [passes] [elements]
 * Prints "time_s: T" (kernel time over all passes, initialisation excluded) and a checksum.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef NADDS
#define NADDS 1
#endif

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
    int passes = argc > 1 ? atoi(argv[1]) : 2;
    long n = argc > 2 ? atol(argv[2]) : 8L * 1024 * 1024;
    if (passes < 1 || n < 1) {
        fprintf(stderr, "usage: %s [passes>=1] [elements>=1]\n", argv[0]);
        return 2;
    }
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
    if (!a || !b || !c) {
        fprintf(stderr, "out of memory for 3 x %ld doubles\n", n);
        return 1;
    }
    for (long i = 0; i < n; i++) {
        a[i] = 0.0;
        b[i] = (double)(i % 1000);
        c[i] = 0.5;
    }
    volatile double sv = 1e-3;
    double s = sv;
    double t = 0.0;
    for (int p = 0; p < passes; p++) {
        double t0 = now();
        for (long i = 0; i < n; i++) {
            double x = b[i] + c[i];
            for (int k = 0; k < NADDS; k++)
                x = x + s;
            a[i] = x;
        }
        t += now() - t0;
        b[p % n] = a[(p * 7919L) % n]; /* keep passes dependent so none is optimised away */
    }
    double sum = 0.0;
    for (long i = 0; i < n; i += 4096)
        sum += a[i];
    printf("nadds: %d\nelements: %ld\npasses: %d\ntime_s: %.6f\nchecksum: %.6e\n", NADDS, n, passes, t, sum);
    free(a);
    free(b);
    free(c);
    return 0;
}
