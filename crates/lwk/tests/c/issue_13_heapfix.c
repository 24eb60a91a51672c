/* The lwk-heap override's fixes (issue #13): a buffer grown by realloc in 4 KiB steps to
   argv[1] MiB (the allocator used to leave every old run unused: 13 MiB in the LWK, 24 GB
   natively for 256 MiB); the memalign family with sizes near SIZE_MAX (used to wrap and hand out
   small blocks); malloc_usable_size of a block of glibc's (used to be 0); freed runs reused. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fails;
#define CHECK(c, ...) do { int c_ = (c); printf("%s - ", c_ ? "ok" : "not ok"); printf(__VA_ARGS__); printf("\n"); if (!c_) fails++; } while (0)

static volatile size_t huge = SIZE_MAX; /* volatile: no compile-time size warnings */

int main(int argc, char **argv) {
    size_t max = (argc > 1 ? strtoul(argv[1], 0, 10) : 256) << 20, n;
    char *p = NULL;
    for (n = 4096; n <= max; n += 4096) {
        char *q = realloc(p, n);
        if (!q) break;
        if (q != p && p && q[n - 4097] != 7) { printf("not ok - realloc lost the contents at %zu\n", n); return 1; }
        p = q;
        p[n - 1] = 7;
    }
    CHECK(n > max, "realloc grew a buffer by 4 KiB steps to %zu MiB (reached %zu MiB)", max >> 20, (n - 4096) >> 20);
    free(p);

    void *r;
    errno = 0; r = memalign(64, huge - 10); CHECK(!r && errno == ENOMEM, "memalign(64, SIZE_MAX-10): %p errno %d", r, errno);
    errno = 0; r = aligned_alloc(4096, huge - 100); CHECK(!r && errno == ENOMEM, "aligned_alloc(4096, SIZE_MAX-100): %p errno %d", r, errno);
    void *q = (void *)1;
    int e = posix_memalign(&q, 256, huge - 50); CHECK(e == ENOMEM && q == (void *)1, "posix_memalign(256, SIZE_MAX-50): %d", e);
    errno = 0; r = valloc(huge - 4000); CHECK(!r && errno == ENOMEM, "valloc(SIZE_MAX-4000): %p errno %d", r, errno);
    errno = 0; r = pvalloc(huge); CHECK(!r && errno == ENOMEM, "pvalloc(SIZE_MAX): %p errno %d", r, errno);
    errno = 0; r = pvalloc(huge - 100); CHECK(!r && errno == ENOMEM, "pvalloc(SIZE_MAX-100): %p errno %d", r, errno);
    errno = 0; r = malloc(huge); CHECK(!r && errno == ENOMEM, "malloc(SIZE_MAX): %p errno %d", r, errno);

    /* aligned blocks are aligned, up to the alignments glibc serves (past 1 MiB) */
    for (size_t al = 16; al <= (4u << 20); al <<= 1) {
        char *b = aligned_alloc(al, 3 * al + 5);
        int good = b && ((uintptr_t)b & (al - 1)) == 0 && malloc_usable_size(b) >= 3 * al + 5;
        if (b) memset(b, 1, 3 * al + 5);
        if (!good) CHECK(0, "aligned_alloc(%zu): %p usable %zu", al, (void *)b, b ? malloc_usable_size(b) : 0);
        free(b);
    }
    CHECK(1, "aligned_alloc up to 4 MiB alignments");
    /* 2 MiB alignment: glibc's block; its usable size is glibc's */
    char *g = aligned_alloc(2u << 20, 1000);
    CHECK(g && malloc_usable_size(g) >= 1000, "malloc_usable_size of glibc's block: %zu", g ? malloc_usable_size(g) : 0);
    free(g);

    /* freed runs are reused: 2000 rounds of a 3 MiB block and 1000 of 1 MiB ones */
    for (int i = 0; i < 2000; i++) {
        char *a = malloc(3u << 20), *b = malloc((1u << 20) + (size_t)i * 64);
        if (!a || !b) { CHECK(0, "round %d", i); break; }
        a[0] = b[0] = 1;
        free(a);
        free(b);
    }
    CHECK(1, "blocks of a few MiB allocated and freed in turn");
    char *c = calloc(5u << 20, 1);
    size_t nz = 0;
    for (size_t i = 0; c && i < (5u << 20); i++) nz += c[i] != 0;
    CHECK(c && nz == 0, "calloc of a reused run is zero (%zu non-zero)", nz);
    free(c);
    printf("%s\n", fails ? "FAILED" : "heapfix done");
    return fails != 0;
}
