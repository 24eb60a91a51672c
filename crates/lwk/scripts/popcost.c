// What a page of fresh anonymous memory costs, populated or touched (issue #13): maps N chunks of
// 2 MiB and populates each with madvise(MADV_POPULATE_WRITE), then touches one byte a page; then
// touches a fresh mapping of the same size; three times. Prints ns per page for each. Natively
// and in the LWK (`multios lwk run --populate-at-map off -- ./popcost 32`: the guest's own
// madvise, served by the LWK) it gives the prices docs/BENCHMARKS.md quotes.
// Build: gcc -O2 -o popcost crates/lwk/scripts/popcost.c
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static void touch(char *p, size_t len) {
    for (size_t i = 0; i < len; i += 4096) p[i] = 1;
}

int main(int argc, char **argv) {
    const size_t chunk = 2 << 20;
    size_t n = argc > 1 ? (size_t)atol(argv[1]) : 32, len = chunk * n;
    double pages = len / 4096.0;
    for (int rep = 0; rep < 3; rep++) {
        char *p = mmap(0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        char *q = mmap(0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED || q == MAP_FAILED) return 1;
        double t0 = now_ns();
        for (size_t i = 0; i < n; i++) madvise(p + i * chunk, chunk, MADV_POPULATE_WRITE);
        double t1 = now_ns();
        touch(p, len);
        double t2 = now_ns();
        touch(q, len);
        double t3 = now_ns();
        printf("populate %.0f ns/page, touch after populate %.0f ns/page, first touch %.0f ns/page\n",
               (t1 - t0) / pages, (t2 - t1) / pages, (t3 - t2) / pages);
        munmap(p, len);
        munmap(q, len);
    }
    return 0;
}
