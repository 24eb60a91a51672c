/* mprotect cost (issue #14): N calls alternating PROT_READ and PROT_READ|PROT_WRITE on one 4 KiB
 * page of a 4 MiB mapping, each write-enabling call followed by a write to the page. Prints the
 * loop time and the median time of the calls that take write access away (tighten) and of those
 * that give it back (relax): in the LWK the first make KVM drop its shadow page tables. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
static int cmp(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}
static long now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 20000L;
    char *m = mmap(0, 4 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return 1;
    char *page = m + (2 << 20);
    long *t[2] = {calloc(n / 2 + 1, sizeof(long)), calloc(n / 2 + 1, sizeof(long))};
    long failed = 0, start = now();
    for (long i = 0; i < n; i++) {
        int rw = i & 1;
        long t0 = now();
        failed += mprotect(page, 4096, rw ? PROT_READ | PROT_WRITE : PROT_READ) != 0;
        t[rw][i / 2] = now() - t0;
        if (rw)
            page[i & 4095] = (char)i;
    }
    long total = now() - start;
    qsort(t[0], (n + 1) / 2, sizeof(long), cmp);
    qsort(t[1], n / 2, sizeof(long), cmp);
    printf("kernel_ns %ld calls %ld failed %ld tighten_median_ns %ld relax_median_ns %ld\n", total, n,
           failed, t[0][(n + 1) / 4], t[1][n / 4]);
    return failed != 0;
}
