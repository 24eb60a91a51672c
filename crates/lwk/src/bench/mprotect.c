/* mprotect cost (issue #14): N calls alternating PROT_READ and PROT_READ|PROT_WRITE on one 4 KiB
 * page of a 4 MiB mapping, each write-enabling call followed by a write to the page (so a stale
 * translation would show). In the LWK each call rewrites a page table and reloads CR3. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 20000L;
    char *m = mmap(0, 4 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return 1;
    char *page = m + (2 << 20);
    struct timespec a, b;
    long failed = 0;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++) {
        int rw = i & 1;
        failed += mprotect(page, 4096, rw ? PROT_READ | PROT_WRITE : PROT_READ) != 0;
        if (rw)
            page[i & 4095] = (char)i;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("kernel_ns %lld calls %ld failed %ld\n",
           (long long)((b.tv_sec - a.tv_sec) * 1000000000LL + b.tv_nsec - a.tv_nsec), n, failed);
    return failed != 0;
}
