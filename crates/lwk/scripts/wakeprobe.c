// How long a thread asleep on a futex on CPU A (default 0) takes to run after a thread on CPU B
// (default 1) wakes it, in µs: 200 wake-ups, each after GAP_US of busy waiting (default 2048, so
// the sleeper's CPU has gone idle), p10 / p50 / p90 / max. With a third argument `fifo` the sleeper
// is SCHED_FIFO 50, as the emulator's delegate threads are. What every mechanism that sleeps pays
// for its wake-up on this machine (issue #15: the `wakeup` term, the proxy's round trip).
// Build: gcc -O2 -pthread -o wakeprobe crates/lwk/scripts/wakeprobe.c
// Run:   ./wakeprobe [GAP_US] [fifo]
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { WAKES = 200 };
static _Atomic int state; // 0 asleep, 1 woken, 2 stop
static _Atomic uint64_t woke_at;
static int fifo;

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void pin_to(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        perror("sched_setaffinity");
}

static void *sleeper(void *arg) {
    (void)arg;
    pin_to(0);
    if (fifo) {
        struct sched_param p = {.sched_priority = 50};
        if (sched_setscheduler(0, SCHED_FIFO, &p) != 0)
            perror("SCHED_FIFO");
    }
    for (;;) {
        while (atomic_load(&state) == 0)
            syscall(SYS_futex, &state, FUTEX_WAIT, 0, NULL, NULL, 0);
        if (atomic_load(&state) == 2)
            return NULL;
        atomic_store(&woke_at, now_ns());
        atomic_store(&state, 0);
    }
}

static int by_value(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    uint64_t gap = (argc > 1 ? strtoull(argv[1], NULL, 10) : 2048) * 1000;
    fifo = argc > 2 && strcmp(argv[2], "fifo") == 0;
    pthread_t t;
    if (pthread_create(&t, NULL, sleeper, NULL) != 0)
        return 1;
    pin_to(1);
    static uint64_t lat[WAKES];
    for (int i = 0; i < WAKES; i++) {
        uint64_t t0 = now_ns();
        while (now_ns() - t0 < gap)
            ;
        uint64_t at = now_ns();
        atomic_store(&state, 1);
        syscall(SYS_futex, &state, FUTEX_WAKE, 1, NULL, NULL, 0);
        while (atomic_load(&state) != 0)
            ;
        lat[i] = atomic_load(&woke_at) - at;
    }
    qsort(lat, WAKES, sizeof lat[0], by_value);
    printf("wakeprobe gap_us=%llu fifo=%d p10_us=%.1f p50_us=%.1f p90_us=%.1f max_us=%.1f\n",
           (unsigned long long)(gap / 1000), fifo, lat[WAKES / 10] / 1e3, lat[WAKES / 2] / 1e3,
           lat[WAKES * 9 / 10] / 1e3, lat[WAKES - 1] / 1e3);
    atomic_store(&state, 2);
    syscall(SYS_futex, &state, FUTEX_WAKE, 1, NULL, NULL, 0);
    pthread_join(t, NULL);
    return 0;
}
