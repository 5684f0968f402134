/* quiho trace example, version 1: tag lookup by linear search (like vim's old taglist()).
 *
 * Build: gcc -O2 -g -fno-inline -o tags tags.c
 * Run:   ./tags [TAGS [LOOKUPS]]   (default 100000 tags, 300 lookups)
 *
 * Version 2 (../v2/tags.c) replaces the linear search in find_tag() with a hash lookup; every other
 * function is identical, so a per-function detector should flag find_tag() (optimization) and nothing else.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEYLEN 16

struct table {
    unsigned n;
    char (*keys)[KEYLEN];
};

__attribute__((noinline)) void make_key(char *out, unsigned i) {
    snprintf(out, KEYLEN, "tag%07u", i);
}

__attribute__((noinline)) unsigned long score_tag(const char *key) {
    unsigned long h = 5381;
    for (int r = 0; r < 200; r++)
        for (const char *p = key; *p; p++) h = h * 33 + (unsigned char)*p + (unsigned long)r;
    return h;
}

static void build(struct table *t, unsigned n) {
    t->n = n;
    t->keys = malloc((size_t)n * KEYLEN);
    for (unsigned i = 0; i < n; i++) snprintf(t->keys[i], KEYLEN, "tag%07u", i);
}

__attribute__((noinline)) long find_tag(const struct table *t, const char *key) {
    for (unsigned i = 0; i < t->n; i++)
        if (strcmp(t->keys[i], key) == 0) return (long)i;
    return -1;
}

int main(int argc, char **argv) {
    unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 100000;
    unsigned q = argc > 2 ? (unsigned)atoi(argv[2]) : 300;
    struct table t;
    char key[KEYLEN];
    unsigned long acc = 0, seed = 12345;
    build(&t, n);
    for (unsigned j = 0; j < q; j++) {
        seed = seed * 6364136223846793005UL + 1442695040888963407UL;
        make_key(key, (unsigned)((seed >> 33) % n));
        acc += (unsigned long)find_tag(&t, key) + score_tag(key);
    }
    printf("%lu\n", acc);
    free(t.keys);
    return 0;
}
