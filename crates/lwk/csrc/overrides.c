/* multios LWK function overrides (issue #13; Multiverse §III-D): a preloaded object in the guest.
 *
 * ld.so binds the program's calls of an overridden function to this object once, at load time
 * (the GOT is the symbol cache: no lookup per call). Which overrides are on comes from
 * MULTIOS_LWK_OVERRIDES (a comma-separated list the VMM sets from `lwk run --overrides FILE`); an
 * exported function that is not on calls the next definition (libc's), resolved once in the
 * constructor with dlsym(RTLD_NEXT). This file holds the object's constructor and the clock
 * family; threads.c (pthread_create/join on LWK-native threads) and prefault.c (mmap) are the
 * others. The malloc family is a separate object (heap.c), preloaded only when it is on.
 *
 * The clock family ("tsc"): clock_gettime(CLOCK_REALTIME/MONOTONIC and their _COARSE forms),
 * gettimeofday and time are answered in the guest from the TSC instead of a delegated call (the
 * LWK has no vDSO); the CPU-time clocks are extrapolated between readings (cpu_ns below). ns = ns0 + (tsc - tsc0) * ns_per_tick (fixed point); the anchor (tsc0, ns0) is re-taken
 * from the real clock every RESYNC_NS, and the rate is refined over the whole run
 * ((ns - first_ns) / (tsc - first_tsc)), so the error stays within a few µs. A seqlock lets
 * readers run without a lock; the monotonic clock never goes backwards (the last value returned
 * is a floor); CLOCK_REALTIME is the monotonic time plus the real clocks' offset, re-read at each
 * resync, so a stepped real time shows within RESYNC_NS.
 * MULTIOS_LWK_TSC_HZ is the VMM's first estimate of the rate. Other clocks go to libc. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <x86intrin.h>

#include "overrides.h"

#define RESYNC_NS 50000000LL

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);
typedef int (*gettimeofday_fn)(struct timeval *restrict, void *restrict);
typedef time_t (*time_fn)(time_t *);

static clock_gettime_fn real_clock_gettime;
static gettimeofday_fn real_gettimeofday;
static time_fn real_time;
static int on_clock_gettime, on_gettimeofday, on_time;

struct anchor {
    uint64_t tsc0, first_tsc;
    int64_t ns0, first_ns;
    /* Nanoseconds per TSC tick, fixed point with 32 fractional bits. The arithmetic is integer
     * throughout: doubles here ran under the program's MXCSR — a program that unmasked
     * FE_INEXACT got SIGFPE from its first clock_gettime, and its rounding mode and FTZ applied
     * to the library's conversion (`issue_13_the_clock_overrides_do_no_floating_point_under_the_programs_mxcsr`). */
    int64_t ns_per_tick_q32;
    /* CLOCK_REALTIME - CLOCK_MONOTONIC, as the real clocks said at the last resync. */
    int64_t rt_offset;
};

/* The TSC runs CLOCK_MONOTONIC only; CLOCK_REALTIME is the monotonic time plus the real clocks'
 * offset re-read at every resync, so that when the real time is stepped (settimeofday, NTP) the
 * realtime clock follows — backwards too, as the real one does — within RESYNC_NS. */
static struct anchor anchor;
static uint32_t seq;
static int resyncing;
static int64_t last_mono;
static uint64_t resync_ticks;

static int64_t real_ns(clockid_t c) {
    struct timespec ts;
    real_clock_gettime(c, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Takes the anchor and the realtime offset from the real clocks (one thread at a time). */
static void resync(int first, uint64_t hz) {
    if (__atomic_exchange_n(&resyncing, 1, __ATOMIC_ACQUIRE)) return;
    struct anchor next = anchor;
    uint64_t a = __rdtsc();
    int64_t ns = real_ns(CLOCK_MONOTONIC);
    uint64_t b = __rdtsc();
    int64_t rt = real_ns(CLOCK_REALTIME);
    int64_t ns2 = real_ns(CLOCK_MONOTONIC);
    uint64_t t = a + (b - a) / 2;
    next.tsc0 = t;
    next.ns0 = ns;
    next.rt_offset = rt - (ns + (ns2 - ns) / 2);
    if (first) {
        next.first_tsc = t;
        next.first_ns = ns;
        next.ns_per_tick_q32 = (int64_t)(((unsigned __int128)1000000000u << 32) / hz);
    } else if (t > next.first_tsc && ns > next.first_ns) {
        next.ns_per_tick_q32 =
            (int64_t)(((unsigned __int128)(uint64_t)(ns - next.first_ns) << 32) / (t - next.first_tsc));
    }
    __atomic_fetch_add(&seq, 1, __ATOMIC_ACQ_REL);
    anchor = next;
    __atomic_fetch_add(&seq, 1, __ATOMIC_ACQ_REL);
    resync_ticks = next.ns_per_tick_q32 > 0
                       ? (uint64_t)(((unsigned __int128)RESYNC_NS << 32) / (uint64_t)next.ns_per_tick_q32)
                       : 0;
    __atomic_store_n(&resyncing, 0, __ATOMIC_RELEASE);
}

/* [k] 0: CLOCK_REALTIME, 1: CLOCK_MONOTONIC, in ns. Only the monotonic clock is held from going
 * backwards (the last value returned is a floor); the realtime one moves with the real clock. */
static int64_t tsc_ns(int k) {
    struct anchor a;
    for (;;) {
        uint32_t s = __atomic_load_n(&seq, __ATOMIC_ACQUIRE);
        if (s & 1) continue;
        a = anchor;
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&seq, __ATOMIC_RELAXED) == s) break;
    }
    uint64_t t = __rdtsc();
    if (t - a.tsc0 > resync_ticks) resync(0, 0);
    int64_t ns = a.ns0 + (int64_t)(((__int128)(int64_t)(t - a.tsc0) * a.ns_per_tick_q32) >> 32);
    int64_t prev = __atomic_load_n(&last_mono, __ATOMIC_RELAXED);
    while (ns > prev &&
           !__atomic_compare_exchange_n(&last_mono, &prev, ns, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    if (ns < prev) ns = prev;
    return k == 0 ? ns + a.rt_offset : ns;
}

static int which(clockid_t c) {
    switch (c) {
    case CLOCK_REALTIME:
    case CLOCK_REALTIME_COARSE: return 0;
    case CLOCK_MONOTONIC:
    case CLOCK_MONOTONIC_COARSE: return 1;
    default: return -1;
    }
}

/* The CPU-time clocks (CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID): the real value,
 * read every RESYNC_NS of the monotonic clock and extrapolated in between at the rate it grew
 * over the previous interval (0 while the process slept, 1 for one busy thread, 2 for two), and
 * never backwards (after an overshoot the clock holds until the real one catches up). Runtimes
 * read them for scheduling quanta and collector statistics (Racket: hundreds of times a second),
 * which the LWK would otherwise forward every time. The price: a reading may be off by the CPU
 * time of one interval's change of pace. */
struct cpu_anchor {
    int64_t wall0, cpu0, last;
    int64_t rate_q32; /* CPU ns per wall ns, 32 fractional bits (integers: see ns_per_tick_q32) */
    int valid;
};
static struct cpu_anchor process_anchor;
static int process_lock;
static __thread struct cpu_anchor thread_anchor;

static int64_t cpu_ns(clockid_t c, struct cpu_anchor *a) {
    int64_t now = tsc_ns(1);
    if (!a->valid || now - a->wall0 >= RESYNC_NS || now < a->wall0) {
        int64_t real = real_ns(c);
        __int128 rate = (__int128)1 << 32;
        if (a->valid && now > a->wall0) rate = ((__int128)(real - a->cpu0) << 32) / (now - a->wall0);
        a->rate_q32 = rate < 0 ? 0 : rate > ((__int128)64 << 32) ? (int64_t)64 << 32 : (int64_t)rate;
        a->wall0 = now;
        a->cpu0 = real;
        a->valid = 1;
    }
    int64_t v = a->cpu0 + (int64_t)(((__int128)(now - a->wall0) * a->rate_q32) >> 32);
    if (v < a->last) v = a->last;
    a->last = v;
    return v;
}

int clock_gettime(clockid_t c, struct timespec *ts) {
    int k = which(c);
    if (on_clock_gettime && (c == CLOCK_PROCESS_CPUTIME_ID || c == CLOCK_THREAD_CPUTIME_ID)) {
        int64_t ns;
        if (c == CLOCK_THREAD_CPUTIME_ID) {
            ns = cpu_ns(c, &thread_anchor);
        } else {
            while (__atomic_exchange_n(&process_lock, 1, __ATOMIC_ACQUIRE)) __builtin_ia32_pause();
            ns = cpu_ns(c, &process_anchor);
            __atomic_store_n(&process_lock, 0, __ATOMIC_RELEASE);
        }
        ts->tv_sec = ns / 1000000000LL;
        ts->tv_nsec = ns % 1000000000LL;
        return 0;
    }
    if (!on_clock_gettime || k < 0) return real_clock_gettime(c, ts);
    int64_t ns = tsc_ns(k);
    ts->tv_sec = ns / 1000000000LL;
    ts->tv_nsec = ns % 1000000000LL;
    return 0;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    if (!on_gettimeofday || tz) return real_gettimeofday(tv, tz);
    int64_t ns = tsc_ns(0);
    tv->tv_sec = ns / 1000000000LL;
    tv->tv_usec = (ns % 1000000000LL) / 1000;
    return 0;
}

time_t time(time_t *t) {
    if (!on_time) return real_time(t);
    time_t s = (time_t)(tsc_ns(0) / 1000000000LL);
    if (t) *t = s;
    return s;
}

int multios_listed(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0) return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

void *multios_next(const char *name) { return dlsym(RTLD_NEXT, name); }

__attribute__((constructor)) static void init(void) {
    const char *list = getenv("MULTIOS_LWK_OVERRIDES");
    multios_threads_init(list);
    multios_prefault_init(list);
    real_clock_gettime = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
    real_gettimeofday = (gettimeofday_fn)dlsym(RTLD_NEXT, "gettimeofday");
    real_time = (time_fn)dlsym(RTLD_NEXT, "time");
    const char *hz = getenv("MULTIOS_LWK_TSC_HZ");
    /* The only floating point: at start-up, before the program's own code has run. */
    double parsed = hz ? strtod(hz, NULL) : 0;
    uint64_t rate = parsed >= 1 && parsed < 1e12 ? (uint64_t)parsed : 0;
    if (!real_clock_gettime || !real_gettimeofday || !real_time || !rate) return;
    on_clock_gettime = multios_listed(list, "clock_gettime");
    on_gettimeofday = multios_listed(list, "gettimeofday");
    on_time = multios_listed(list, "time");
    if (on_clock_gettime || on_gettimeofday || on_time) resync(1, rate);
}
