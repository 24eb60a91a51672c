/* rtrand: does a delegated call cost a program that reads scattered memory its caches? (issue #15)
 *
 * sort merging its lines reads ≈ 100 lines from scattered places of an 8 MiB buffer between two
 * 4 KiB writes. This program does N iterations of [read K random 64-byte lines of a W KiB buffer
 * (a dependent chain, so the reads are not overlapped); write 4 KiB to FILE] and prints the mean ns
 * per iteration. Run natively and under a mechanism with K = 0 and K > 0: (K>0 − K=0 under the
 * mechanism) − (K>0 − K=0 natively) is what a delegated call costs that program in refills.
 *
 *   gcc -O2 -o rtrand crates/emulate/scripts/rtrand.c
 *   for K in 0 100 400; do
 *     taskset -c 0 ./rtrand out.bin 2000 16384 $K
 *     multios emulate --mechanism proxy --policy all --fc 50us -- ./rtrand out.bin 2000 16384 $K
 *   done
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s FILE N W_KIB K\n", argv[0]);
        return 2;
    }
    long n = atol(argv[2]), w = atol(argv[3]) * 1024, k = atol(argv[4]);
    if (n <= 0 || w < 4096 || k < 0) {
        fprintf(stderr, "N must be positive, W at least 4 KiB, K not negative\n");
        return 2;
    }
    long lines = w / 64;
    /* one pointer per line: a random cyclic permutation, so each read depends on the last */
    uint64_t *buf = aligned_alloc(64, (size_t)w);
    long *perm = malloc(sizeof(long) * (size_t)lines);
    if (!buf || !perm) return 1;
    for (long i = 0; i < lines; i++) perm[i] = i;
    uint64_t x = 88172645463325252ull;
    for (long i = lines - 1; i > 0; i--) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        long j = (long)(x % (uint64_t)(i + 1));
        long t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    for (long i = 0; i < lines; i++) buf[perm[i] * 8] = (uint64_t)perm[(i + 1) % lines];
    free(perm);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    char out[4096];
    memset(out, 'x', sizeof out);
    uint64_t at = 0;
    double t0 = now();
    for (long i = 0; i < n; i++) {
        for (long r = 0; r < k; r++) at = buf[at * 8];
        out[0] = (char)at;
        if (write(fd, out, sizeof out) != (ssize_t)sizeof out) {
            perror("write");
            return 1;
        }
    }
    double t = now() - t0;
    close(fd);
    printf("W %ld KiB K %ld: %.0f ns per iteration\n", w / 1024, k, t / (double)n);
    return 0;
}
