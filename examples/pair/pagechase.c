/* Memory-bound by address translation: a dependent chase that lands on a new page at every step.
 * The buffer's pages are linked in one random cycle (one node per page, at a random cache line of it), so every
 * load depends on the previous one, no prefetcher can guess the next, and with 4 KiB pages every step misses
 * the TLB (256 MiB is 43x the reach of a 1536-entry second-level TLB): the time follows the page walk and
 * the memory behind it, which huge pages remove. Building the cycle touches one line per page (fast: 64 Ki
 * pages, not 32 Mi slots as a slot-level permutation of the same size would shuffle).
 * Build: gcc -O2 -o pagechase pagechase.c.  Run: ./pagechase [steps] [MiB]
 * Prints "time_s: T" (chase only) and the final page, so the chase cannot be optimised away.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define PAGE 4096L
#define LINE 64L

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
    long steps = argc > 1 ? atol(argv[1]) : 4L * 1024 * 1024;
    long mib = argc > 2 ? atol(argv[2]) : 256;
    if (steps < 1 || mib < 1 || mib > 65536) {
        fprintf(stderr, "usage: %s [steps>=1] [MiB 1..65536]\n", argv[0]);
        return 2;
    }
    long pages = mib * 1024 * 1024 / PAGE;
    /* 2 MiB alignment lets the kernel back the buffer with huge pages when its policy says so */
    char *buf = aligned_alloc(2L * 1024 * 1024, (size_t)(pages * PAGE));
    long *order = malloc((size_t)pages * sizeof *order);
    if (!buf || !order) {
        fprintf(stderr, "out of memory for %ld MiB\n", mib);
        return 1;
    }
    for (long i = 0; i < pages; i++)
        order[i] = i;
    for (long i = pages - 1; i > 0; i--) { /* Sattolo: one cycle through every page */
        long j = (long)(xorshift() % (unsigned long long)i);
        long tmp = order[i];
        order[i] = order[j];
        order[j] = tmp;
    }
    /* node of page p: a pointer at a random line of p */
    char **node = malloc((size_t)pages * sizeof *node);
    if (!node) {
        fprintf(stderr, "out of memory for %ld MiB\n", mib);
        return 1;
    }
    for (long p = 0; p < pages; p++)
        node[p] = buf + p * PAGE + (long)(xorshift() % (PAGE / LINE)) * LINE;
    for (long p = 0; p < pages; p++)
        *(char **)node[p] = node[order[p]];
    char *at = node[0];
    free(order);
    free(node);
    double t0 = now();
    for (long s = 0; s < steps; s++)
        at = *(char **)at;
    double t = now() - t0;
    printf("steps: %ld\nmib: %ld\ntime_s: %.6f\nend: %ld\n", steps, mib, t, (long)((at - buf) / PAGE));
    free(buf);
    return 0;
}
