/* rtwrite: the time of a write(2) of SIZE bytes to a file when writes come GAP_NS apart (issue #15).
 *
 * sort's output under proxy costs ≈ 20 µs a write more than the f_c probe (a raw getppid 2 µs
 * apart) predicts. This program writes COUNT blocks of SIZE bytes to FILE (truncated first), each
 * after a busy wait of GAP_NS (clock_gettime, answered by the vDSO), and times each write with the
 * monotonic clock; with TOUCH > 0 it also writes TOUCH bytes of a private buffer before each block
 * (sort fills its output buffer from the sorted lines). With THREADS > 0 it first starts and joins
 * that many threads (sort sorts with helper threads before it writes). Prints the percentiles in ns.
 *
 *   gcc -O2 -pthread -o rtwrite crates/emulate/scripts/rtwrite.c
 *   ./rtwrite FILE COUNT SIZE GAP_NS [TOUCH [THREADS]]
 *   multios emulate --mechanism proxy --policy all --fc 50us -- ./rtwrite out 2000 4096 6000
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static unsigned long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void *idle(void *arg) {
    volatile unsigned long *x = arg;
    for (int i = 0; i < 1000000; i++) (*x)++;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 5 || argc > 7) {
        fprintf(stderr, "usage: %s FILE COUNT SIZE GAP_NS [TOUCH [THREADS]]\n", argv[0]);
        return 2;
    }
    long count = atol(argv[2]), size = atol(argv[3]);
    unsigned long long gap = strtoull(argv[4], NULL, 10);
    long touch = argc > 5 ? atol(argv[5]) : 0;
    long threads = argc > 6 ? atol(argv[6]) : 0;
    if (count <= 0 || size <= 0 || touch < 0 || threads < 0) {
        fprintf(stderr, "COUNT and SIZE must be positive, TOUCH and THREADS not negative\n");
        return 2;
    }
    unsigned long counters[64] = {0};
    pthread_t t[64];
    if (threads > 64) threads = 64;
    for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, idle, &counters[i]);
    for (long i = 0; i < threads; i++) pthread_join(t[i], NULL);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    char *buf = malloc(size);
    char *scratch = touch ? malloc(touch) : NULL;
    double *d = malloc(sizeof(double) * count);
    if (!buf || !d || (touch && !scratch)) return 1;
    memset(buf, 'x', size);
    for (long i = 0; i < count; i++) {
        unsigned long long s = now_ns();
        if (scratch) memset(scratch, (int)i, touch);
        while (now_ns() - s < gap) {
        }
        unsigned long long a = now_ns();
        if (write(fd, buf, size) != size) {
            perror("write");
            return 1;
        }
        d[i] = (double)(now_ns() - a);
    }
    close(fd);
    qsort(d, count, sizeof(double), cmp);
    printf("size %ld gap %llu touch %ld threads %ld: p10 %.0f p25 %.0f p50 %.0f p75 %.0f p90 %.0f ns\n",
           size, gap, touch, threads, d[count / 10], d[count / 4], d[count / 2], d[count * 3 / 4],
           d[count * 9 / 10]);
    return 0;
}
