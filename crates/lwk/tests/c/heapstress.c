/* Issue #14: memory calls of several threads at once. Four threads grow blocks with realloc (glibc
 * moves large blocks with mremap) while they map and unmap others (malloc/free above the mmap
 * threshold, which mallopt fixes at 64 KiB), each block filled with its own pattern and checked
 * whole before it is grown or freed. The LWK once released a moved or unmapped range before
 * zeroing it, so a range another thread had just been given was wiped under it. Prints the
 * number of blocks checked per thread and the first corruption seen, if any. */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 4
#define ROUNDS 12
#define SMALL 6

/* Blocks are whole numbers of KiB, filled 8 bytes at a time. */
static uint64_t pattern(unsigned seed, size_t k) { return (uint64_t)seed << 32 | k; }

static void fill(void *b, size_t from, size_t n, unsigned seed) {
    uint64_t *p = b;
    for (size_t k = from / 8; k < n / 8; k++) p[k] = pattern(seed, k);
}

/* The offset of the first word of b[0..n) that lost its pattern, or -1. */
static long check(const void *b, size_t n, unsigned seed) {
    const uint64_t *p = b;
    for (size_t k = 0; k < n / 8; k++)
        if (p[k] != pattern(seed, k)) return (long)k * 8;
    return -1;
}

struct result { unsigned seed; long checked; char bad[160]; };

static void *work(void *arg) {
    struct result *r = arg;
    unsigned s = r->seed;
    unsigned char *small[SMALL] = {0};
    size_t small_n[SMALL] = {0};
    unsigned small_seed[SMALL] = {0};
    for (int round = 0; round < ROUNDS && !r->bad[0]; round++) {
        s = s * 1103515245 + 12345;
        unsigned seed = s >> 8;
        size_t n = (size_t)(256 + (s >> 16) % 512) << 10;
        unsigned char *big = malloc(n);
        if (!big) { snprintf(r->bad, sizeof r->bad, "malloc(%zu) failed", n); break; }
        fill(big, 0, n, seed);
        for (int grow = 0; grow < 3; grow++) {
            /* Between two growths: a small block is checked and freed, another one mapped. */
            int j = (s >> (4 + grow)) % SMALL;
            if (small[j]) {
                long at = check(small[j], small_n[j], small_seed[j]);
                if (at >= 0) {
                    snprintf(r->bad, sizeof r->bad, "small block of %zu bytes wrong at offset %ld", small_n[j], at);
                    break;
                }
                r->checked++;
                free(small[j]);
            }
            small_n[j] = (size_t)(80 + (seed + grow * 37) % 300) << 10;
            small_seed[j] = seed + grow;
            small[j] = malloc(small_n[j]);
            if (!small[j]) { snprintf(r->bad, sizeof r->bad, "malloc failed"); break; }
            fill(small[j], 0, small_n[j], small_seed[j]);
            unsigned char *grown = realloc(big, n * 2);
            if (!grown) { snprintf(r->bad, sizeof r->bad, "realloc failed"); break; }
            big = grown;
            long at = check(big, n, seed);
            if (at >= 0) {
                snprintf(r->bad, sizeof r->bad, "grown block of %zu bytes wrong at offset %ld", n, at);
                break;
            }
            r->checked++;
            fill(big, n, n * 2, seed);
            n *= 2;
        }
        long at = r->bad[0] ? -1 : check(big, n, seed);
        if (at >= 0) snprintf(r->bad, sizeof r->bad, "block of %zu bytes wrong at offset %ld", n, at);
        r->checked++;
        free(big);
    }
    for (int j = 0; j < SMALL; j++) {
        if (small[j] && !r->bad[0] && check(small[j], small_n[j], small_seed[j]) >= 0)
            snprintf(r->bad, sizeof r->bad, "small block of %zu bytes wrong at the end", small_n[j]);
        free(small[j]);
    }
    return 0;
}

int main(void) {
    /* A fixed threshold: every block above 64 KiB is its own mapping (glibc otherwise raises the
     * threshold after the first free and serves later blocks from its arenas). */
    mallopt(M_MMAP_THRESHOLD, 64 << 10);
    static struct result res[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        res[i].seed = i + 1;
        pthread_create(&t[i], 0, work, &res[i]);
    }
    int bad = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], 0);
        if (res[i].bad[0]) {
            printf("thread %d: %s\n", i, res[i].bad);
            bad = 1;
        } else {
            printf("thread %d: %ld blocks checked\n", i, res[i].checked);
        }
    }
    return bad;
}
