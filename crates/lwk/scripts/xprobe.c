// The cross-CPU cache-line round trip now, in ns: two threads pinned to CPUs A and B (default 0
// and 1) hand one cache line back and forth; prints the median of 40 batches of 250 round trips.
// Used by rotate.py (ROTATE_PROBE) to tag each round with the level it ran at (issue #13; the
// Rust twin is crates/experiment/src/crosslink.rs).
// Build: gcc -O2 -pthread -o xprobe crates/lwk/scripts/xprobe.c
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { BATCHES = 40, PER = 250 };
static _Alignas(64) _Atomic long ball;
static int other_cpu;

static void pin_to(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *responder(void *unused) {
    (void)unused;
    pin_to(other_cpu);
    for (long n = 1; n <= (long)BATCHES * PER; n++) {
        while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * n - 1) {
        }
        atomic_store_explicit(&ball, 2 * n, memory_order_release);
    }
    return NULL;
}

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int by_value(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv) {
    int cpu = argc > 1 ? atoi(argv[1]) : 0;
    other_cpu = argc > 2 ? atoi(argv[2]) : 1;
    pin_to(cpu);
    pthread_t t;
    pthread_create(&t, NULL, responder, NULL);
    double batch[BATCHES];
    long n = 0;
    for (int b = 0; b < BATCHES; b++) {
        double t0 = now_ns();
        for (int i = 0; i < PER; i++) {
            n++;
            atomic_store_explicit(&ball, 2 * n - 1, memory_order_release);
            while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * n) {
            }
        }
        batch[b] = (now_ns() - t0) / PER;
    }
    pthread_join(t, NULL);
    qsort(batch, BATCHES, sizeof batch[0], by_value);
    printf("%.0f\n", batch[BATCHES / 2]);
    return 0;
}
