/* Issue #13: the `mmap` override `prefault`. Maps anonymous memory (N MiB, and some smaller
 * mappings), asks the kernel which pages are resident before touching them (mincore), then
 * writes and checks every page. Natively with the override the pages are resident from the start;
 * in the LWK (whose mincore says resident for every mapped page) the output is the same. Prints
 * the checksum and whether the big mapping was resident before its first touch. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

int main(int argc, char **argv) {
    size_t mb = argc > 1 ? (size_t)atol(argv[1]) : 16, len = mb << 20, pages = len / 4096;
    unsigned char *p = mmap(0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 1;
    unsigned char *vec = malloc(pages);
    size_t resident = 0;
    if (mincore(p, len, vec) == 0)
        for (size_t i = 0; i < pages; i++) resident += vec[i] & 1;
    unsigned long sum = 0;
    for (int k = 0; k < 8; k++) {
        unsigned char *q = mmap(0, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        q[k * 4096] = (unsigned char)k;
        sum += q[k * 4096];
        munmap(q, 65536);
    }
    for (size_t i = 0; i < len; i += 4096) p[i] = (unsigned char)(i >> 12);
    for (size_t i = 0; i < len; i += 4096) sum += p[i];
    printf("sum %lu resident_before_touch %s\n", sum, resident == pages ? "all" : resident ? "some" : "none");
    return 0;
}
