/* The microbenchmark of the `overlap` and `cache` terms (issue #15): what a system call costs the
 * compute core beyond its own time, and how much of that a delegated call spares it.
 *
 *   offload KIND N WS_BYTES BYTES FILE
 *
 * KIND is none, null (getppid), write (pwrite of BYTES), read (pread of BYTES) or all (the four
 * interleaved, each call after a call-free iteration — CYCLE below —, N recorded iterations of
 * each, one line per kind: every kind then chases the same physical
 * pages, whose placement moves a run's chase by ±6–8 % from one run to the next). Each of the N
 * iterations makes the call (none: nothing), then a *cache phase* — one pass of a pointer chase
 * over a working set of WS_BYTES in a random order, so that every line the kernel evicted is
 * missed again — then a *register phase* — a fixed amount of arithmetic that touches no memory,
 * so that only time taken from the CPU (other work on it) can stretch it. Every part is timed with
 * the TSC (no system call, no vDSO: the same in the LWK); the calls go to FILE, a region of
 * REGION bytes written once before the loop, at rotating offsets (the page cache stays the same
 * size). One line is printed: KIND, N, the TSC rate and, per part, the median and the mean in ns.
 * Run natively and with the calls delegated, it gives
 *   - the call's time on the caller's clock (write/read against null cancels the round trip and
 *     the delegate's wake-up, which are the same for both), and
 *   - the phases after a local call against after a delegated one: the cache refill the
 *     delegation spares (cache phase) and the kernel's work that stops landing on this CPU
 *     (register phase, mean). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REGION (4u << 20)
#define LINE 64
#define REG_ITERS 40000

/* `all`'s cycle: every call comes one call-free iteration after the previous call, so the null
 * call and the data calls find the delegate in the same state. (With none, null, write, read in
 * turn the null call came two iterations after the last call, ≈ 290 µs, past the shm delegate's
 * 200 µs idle spin, and only it paid the delegate's wake-up: 22 µs against the data calls'
 * 1–2 µs, which made ω 25 and r the wake-up's cache loss, 2026-11-27.) */
#define CYCLE 6
static const int CYCLE_KINDS[CYCLE] = {0, 1, 0, 2, 0, 3};

static inline uint64_t ticks(void) {
    uint32_t lo, hi;
    __asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi)::"memory");
    return ((uint64_t)hi << 32) | lo;
}

static uint64_t mono_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static double median(uint64_t *v, long n) {
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2.0;
}

static double mean(const uint64_t *v, long n) {
    double s = 0;
    for (long i = 0; i < n; i++)
        s += (double)v[i];
    return s / (double)n;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: offload none|null|write|read|all N WS_BYTES BYTES FILE\n");
        return 2;
    }
    const char *kind = argv[1];
    long n = atol(argv[2]);
    size_t ws = (size_t)atol(argv[3]), bytes = (size_t)atol(argv[4]);
    static const char *const names[4] = {"none", "null", "write", "read"};
    int k = !strcmp(kind, "none") ? 0 : !strcmp(kind, "null") ? 1 : !strcmp(kind, "write") ? 2
          : !strcmp(kind, "read") ? 3 : !strcmp(kind, "all") ? 4 : -1;
    /* Kinds measured, and iterations in all: `all` runs cycles of CYCLE iterations, a call-free
     * one before each call (below), and records the first call-free one of each cycle. */
    long kinds = k == 4 ? 4 : 1, total = k == 4 ? n * CYCLE : n;
    if (k < 0 || n < 1 || ws < 2 * LINE || bytes < 1 || bytes > REGION) {
        fprintf(stderr, "offload: bad arguments\n");
        return 2;
    }
    size_t lines = ws / LINE;
    /* One pointer per line, linked in a random cycle (a fixed seed: every run alike). */
    char *set = aligned_alloc(LINE, lines * LINE);
    size_t *order = malloc(lines * sizeof *order);
    char *buf = aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    uint64_t *t_call = malloc((size_t)total * sizeof *t_call),
             *t_ws = malloc((size_t)total * sizeof *t_ws), *t_reg = malloc((size_t)total * sizeof *t_reg);
    if (!set || !order || !buf || !t_call || !t_ws || !t_reg)
        return 3;
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < lines; i++)
        order[i] = i;
    for (size_t i = lines - 1; i > 0; i--) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        size_t j = (size_t)(seed >> 33) % (i + 1), x = order[i];
        order[i] = order[j];
        order[j] = x;
    }
    for (size_t i = 0; i < lines; i++)
        *(char **)(set + order[i] * LINE) = set + order[(i + 1) % lines] * LINE;
    memset(buf, 'x', bytes);
    int fd = open(argv[5], O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        perror(argv[5]);
        return 4;
    }
    for (off_t o = 0; o < REGION; o += (off_t)bytes)
        if (pwrite(fd, buf, bytes, o) != (ssize_t)bytes)
            return 5;
    size_t slots = REGION / bytes;
    char *p = set;
    volatile uint64_t sink = 0;
    uint64_t x = 1;
    uint64_t m0 = mono_ns(), c0 = ticks();
    for (long i = 0; i < total; i++) {
        long round = k == 4 ? i / CYCLE : i;
        off_t off = (off_t)((size_t)round % slots * bytes);
        /* This iteration's kind, and its slot: kind-major, so each kind's times are contiguous;
         * -1: a call-free iteration run but not recorded (the 2nd and 3rd of a cycle). */
        int kk = k == 4 ? CYCLE_KINDS[i % CYCLE] : k;
        long at = k == 4 ? (i % CYCLE == 0 ? 0 : kk * n) + round : i;
        if (k == 4 && kk == 0 && i % CYCLE != 0)
            at = -1;
        uint64_t a = ticks();
        if (kk == 1)
            sink += (uint64_t)getppid();
        else if (kk == 2)
            sink += (uint64_t)pwrite(fd, buf, bytes, off);
        else if (kk == 3)
            sink += (uint64_t)pread(fd, buf, bytes, off);
        uint64_t b = ticks();
        for (size_t j = 0; j < lines; j++)
            p = *(char **)p;
        uint64_t c = ticks();
        for (int j = 0; j < REG_ITERS; j++)
            x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t d = ticks();
        if (at >= 0) {
            t_call[at] = b - a;
            t_ws[at] = c - b;
            t_reg[at] = d - c;
        }
    }
    uint64_t c1 = ticks(), m1 = mono_ns();
    sink += (uint64_t)(uintptr_t)p + x;
    close(fd);
    unlink(argv[5]);
    double hz = (double)(c1 - c0) / ((double)(m1 - m0) * 1e-9), ns = 1e9 / hz;
    for (long q = 0; q < kinds; q++) {
        uint64_t *tc = t_call + q * n, *tw = t_ws + q * n, *tr = t_reg + q * n;
        printf("offload kind=%s n=%ld tsc_hz=%.0f call_med_ns=%.1f call_mean_ns=%.1f ws_med_ns=%.1f "
               "ws_mean_ns=%.1f reg_med_ns=%.1f reg_mean_ns=%.1f sink=%llu\n",
               k == 4 ? names[q] : kind, n, hz, median(tc, n) * ns, mean(tc, n) * ns,
               median(tw, n) * ns, mean(tw, n) * ns, median(tr, n) * ns, mean(tr, n) * ns,
               (unsigned long long)(sink & 1));
    }
    return 0;
}
