/* The `memcalls` term's microbenchmark (issue #15): what mmap, mremap and munmap of anonymous
 * memory cost per call at one length, natively or in the LWK (which serves the three itself:
 * bookkeeping, zeroing, pages given back with MADV_DONTNEED, a moving mremap's copy).
 *
 *   memcalls KIB ROUNDS
 *
 * Each round: K mmaps of KIB KiB (timed together), a write to every 4 KiB page of each (not
 * timed: a program maps memory to use it), K mremaps of each to twice its length with
 * MREMAP_MAYMOVE (timed together; the mappings lie next to each other, so they move), a write to
 * every page of the new halves (not timed), K munmaps of the 2·KIB KiB (timed together). One
 * clock read per group, so that the clock's own cost (a delegated call in the LWK) is spread over
 * K calls. Then the same for a file of KIB KiB (written in the working directory as
 * memcalls.dat, removed at the end): K private read-only mmaps of it (timed together), a read of
 * every page (not timed), K munmaps (timed together) — the LWK maps a file far more slowly than
 * anonymous memory. Prints the medians over the rounds, per call:
 *
 *   memcalls kib KIB mmap_ns X mremap_ns Y munmap_ns Z fmmap_ns F fmunmap_ns G rounds R
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define K 4
#define MAX_ROUNDS 64

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void touch(char *p, size_t len) {
    for (size_t i = 0; i < len; i += 4096) p[i] = 1;
}

int main(int argc, char **argv) {
    size_t len = (size_t)(argc > 1 ? atol(argv[1]) : 1024) << 10;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    if (len == 0 || rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "usage: memcalls KIB ROUNDS (1..%d)\n", MAX_ROUNDS);
        return 2;
    }
    double mm[MAX_ROUNDS], mr[MAX_ROUNDS], mu[MAX_ROUNDS], fm[MAX_ROUNDS], fu[MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
        char *p[K];
        double t0 = now();
        for (int k = 0; k < K; k++) {
            p[k] = mmap(0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p[k] == MAP_FAILED) { perror("mmap"); return 1; }
        }
        mm[r] = (now() - t0) / K;
        for (int k = 0; k < K; k++) touch(p[k], len);
        t0 = now();
        for (int k = 0; k < K; k++) {
            p[k] = mremap(p[k], len, 2 * len, MREMAP_MAYMOVE);
            if (p[k] == MAP_FAILED) { perror("mremap"); return 1; }
        }
        mr[r] = (now() - t0) / K;
        for (int k = 0; k < K; k++) touch(p[k] + len, len);
        t0 = now();
        for (int k = 0; k < K; k++)
            if (munmap(p[k], 2 * len)) { perror("munmap"); return 1; }
        mu[r] = (now() - t0) / K;
    }
    int fd = open("memcalls.dat", O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) { perror("memcalls.dat"); return 1; }
    char *block = malloc(1 << 16);
    memset(block, 7, 1 << 16);
    for (size_t done = 0; done < len; done += 1 << 16)
        if (write(fd, block, len - done < (1 << 16) ? len - done : 1 << 16) < 0) { perror("write"); return 1; }
    free(block);
    for (int r = 0; r < rounds; r++) {
        char *p[K];
        double t0 = now();
        for (int k = 0; k < K; k++) {
            p[k] = mmap(0, len, PROT_READ, MAP_PRIVATE, fd, 0);
            if (p[k] == MAP_FAILED) { perror("mmap of a file"); return 1; }
        }
        fm[r] = (now() - t0) / K;
        volatile char sum = 0;
        for (int k = 0; k < K; k++)
            for (size_t i = 0; i < len; i += 4096) sum += p[k][i];
        t0 = now();
        for (int k = 0; k < K; k++)
            if (munmap(p[k], len)) { perror("munmap of a file"); return 1; }
        fu[r] = (now() - t0) / K;
    }
    close(fd);
    unlink("memcalls.dat");
    printf("memcalls kib %zu mmap_ns %.0f mremap_ns %.0f munmap_ns %.0f fmmap_ns %.0f fmunmap_ns %.0f rounds %d\n",
           len >> 10, median(mm, rounds), median(mr, rounds), median(mu, rounds), median(fm, rounds),
           median(fu, rounds), rounds);
    return 0;
}
