/* The program's own CPU time under shm (issue #15): its delegate threads spin and make its calls
 * inside its process, so Linux's process CPU clock (CLOCK_PROCESS_CPUTIME_ID and the own-pid
 * clocks clock_getcpuclockid makes), getrusage(RUSAGE_SELF) and times() counted them: a single
 * busy thread making calls read 2.10 times its thread clock. Their results are corrected here:
 * less the delegates' CPU time — the live ones' thread clocks and the total of the ended ones,
 * which each delegate adds itself just before it exits. The ended total is this process's image:
 * after an exec the time of the delegates before it stays in the counts (EMULATOR.md).
 *
 * Runs on delegates (a bare thread: no libc, no TLS) and on the program's threads (the slow path,
 * the SIGSYS handler): raw system calls and atomics only. */
#include "preload.h"
#include <sys/syscall.h>
#include <time.h>
#include <x86intrin.h>

#define raw6 multios_xsys
#define MAX_TRACKED 1024
#define NS 1000000000ULL
#define USER_HZ 100 /* times() counts in hundredths of a second on x86-64 */

/* The kernel's CPU clock kinds. */
enum { PROF = 0, VIRT = 1, SCHED = 2 };

struct cpu3 {
    uint64_t run, user, sys; /* ns: on a CPU; the tick-sampled user and system times */
};

static volatile int32_t tracked[MAX_TRACKED]; /* live delegates */
static volatile uint64_t ended_run, ended_user, ended_sys;
/* Odd while a delegate moves its time from `tracked` to the ended totals; writers take `wlock`. */
static volatile uint32_t seq, wlock;
/* The last process clock reported (CPUCLOCK_SCHED, corrected): never backwards. */
static volatile uint64_t last_run;

/* Thread `tid`'s clock (0: the calling thread), ns; 0 when it is not a thread of this process. */
static uint64_t thread_ns(int32_t tid, int kind) {
    struct timespec t;
    long id = (long)(int)(((unsigned)~tid << 3) | 4 | kind);
    if (raw6(SYS_clock_gettime, id, (long)&t, 0, 0, 0, 0) != 0)
        return 0;
    return (uint64_t)t.tv_sec * NS + (uint64_t)t.tv_nsec;
}

static struct cpu3 thread_cpu(int32_t tid, int all) {
    struct cpu3 c = {thread_ns(tid, SCHED), 0, 0};
    if (all && c.run) {
        c.user = thread_ns(tid, VIRT);
        uint64_t prof = thread_ns(tid, PROF);
        c.sys = prof > c.user ? prof - c.user : 0;
    }
    return c;
}

HIDDEN void multios_own_cpu_add(int32_t tid) {
    for (int i = 0; i < MAX_TRACKED; i++) {
        int32_t zero = 0;
        if (__atomic_compare_exchange_n(&tracked[i], &zero, tid, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return;
    }
}

/* On a delegate, right before its exit: its time joins the ended totals (in one step for the
 * readers) and it leaves `tracked`. */
HIDDEN void multios_own_cpu_retire(void) {
    int32_t tid = (int32_t)raw6(SYS_gettid, 0, 0, 0, 0, 0, 0);
    while (__atomic_exchange_n(&wlock, 1, __ATOMIC_ACQUIRE))
        _mm_pause();
    __atomic_fetch_add(&seq, 1, __ATOMIC_SEQ_CST);
    struct cpu3 c = thread_cpu(0, 1);
    ended_run += c.run;
    ended_user += c.user;
    ended_sys += c.sys;
    for (int i = 0; i < MAX_TRACKED; i++)
        if (tracked[i] == tid)
            tracked[i] = 0;
    __atomic_fetch_add(&seq, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&wlock, 0, __ATOMIC_RELEASE);
}

/* In a fork child: the parent's delegates are not this process's (it makes its own). */
HIDDEN void multios_own_cpu_forked(void) {
    for (int i = 0; i < MAX_TRACKED; i++)
        tracked[i] = 0;
    ended_run = ended_user = ended_sys = last_run = 0;
    seq = wlock = 0;
}

/* The delegates' CPU time so far (`all`: with the user/system ticks). */
static struct cpu3 delegates(int all) {
    for (unsigned spins = 0;; spins++) {
        uint32_t s = __atomic_load_n(&seq, __ATOMIC_SEQ_CST);
        if (s & 1) {
            if (spins % 64 == 63)
                raw6(SYS_sched_yield, 0, 0, 0, 0, 0, 0); /* a retiring delegate, descheduled */
            _mm_pause();
            continue;
        }
        struct cpu3 sum = {ended_run, ended_user, ended_sys};
        for (int i = 0; i < MAX_TRACKED; i++) {
            int32_t t = __atomic_load_n(&tracked[i], __ATOMIC_ACQUIRE);
            if (t > 0) {
                struct cpu3 c = thread_cpu(t, all);
                sum.run += c.run;
                sum.user += c.user;
                sum.sys += c.sys;
            }
        }
        if (__atomic_load_n(&seq, __ATOMIC_SEQ_CST) == s)
            return sum;
    }
}

static uint64_t minus(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

/* The kind of a process CPU clock naming this process (MAKE_PROCESS_CPUCLOCK: `~pid << 3`, no
 * per-thread bit, a kind 0-2; pid 0 is the caller's), or -1. */
static int own_process_clock(long clock) {
    int id = (int)clock;
    if (id == CLOCK_PROCESS_CPUTIME_ID)
        return SCHED;
    if (id >= 0 || (id & 4) || (id & 3) == 3)
        return -1;
    int pid = ~(id >> 3);
    return pid == 0 || pid == raw6(SYS_getpid, 0, 0, 0, 0, 0, 0) ? (id & 3) : -1;
}

/* The delegates' run time split into (user, system) in their ticks' ratio. */
static void split(struct cpu3 d, uint64_t *u, uint64_t *s) {
    *s = d.sys == 0 ? 0 : d.user == 0 ? d.run : (uint64_t)((unsigned __int128)d.run * d.sys / (d.sys + d.user));
    *u = d.run - *s;
}

/* Takes the delegates' (du, ds) from the process's (u, s); what one cannot give the other does. */
static void take(uint64_t *u, uint64_t *s, uint64_t du, uint64_t ds) {
    uint64_t over_u = du > *u ? du - *u : 0, over_s = ds > *s ? ds - *s : 0;
    *u = minus(minus(*u, du), over_s);
    *s = minus(minus(*s, ds), over_u);
}

HIDDEN void multios_own_cpu_fix(long nr, long a0, long a1, long r) {
    if (multios_mode != MODE_SHM)
        return;
    if (nr == SYS_clock_gettime && r == 0 && a1) {
        int kind = own_process_clock(a0);
        if (kind < 0)
            return;
        struct timespec *t = (struct timespec *)a1;
        uint64_t v = (uint64_t)t->tv_sec * NS + (uint64_t)t->tv_nsec;
        struct cpu3 d = delegates(kind != SCHED);
        v = minus(v, kind == SCHED ? d.run : kind == VIRT ? d.user : d.user + d.sys);
        if (kind == SCHED) {
            uint64_t last = __atomic_load_n(&last_run, __ATOMIC_ACQUIRE);
            while (v > last && !__atomic_compare_exchange_n(&last_run, &last, v, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                ;
            if (v < last)
                v = last;
        }
        t->tv_sec = (time_t)(v / NS);
        t->tv_nsec = (long)(v % NS);
    } else if (nr == SYS_getrusage && a0 == 0 /* RUSAGE_SELF */ && r == 0 && a1) {
        struct timeval *tv = (struct timeval *)a1; /* ru_utime, ru_stime */
        uint64_t u = (uint64_t)tv[0].tv_sec * 1000000 + (uint64_t)tv[0].tv_usec;
        uint64_t s = (uint64_t)tv[1].tv_sec * 1000000 + (uint64_t)tv[1].tv_usec, du, ds;
        split(delegates(1), &du, &ds);
        take(&u, &s, du / 1000, ds / 1000);
        tv[0].tv_sec = (time_t)(u / 1000000);
        tv[0].tv_usec = (long)(u % 1000000);
        tv[1].tv_sec = (time_t)(s / 1000000);
        tv[1].tv_usec = (long)(s % 1000000);
    } else if (nr == SYS_times && a0 && (unsigned long)r < -4095UL) {
        long *tms = (long *)a0; /* tms_utime, tms_stime, tms_cutime, tms_cstime */
        uint64_t u = (uint64_t)tms[0], s = (uint64_t)tms[1], du, ds;
        split(delegates(1), &du, &ds);
        take(&u, &s, du / (NS / USER_HZ), ds / (NS / USER_HZ));
        tms[0] = (long)u;
        tms[1] = (long)s;
    }
}
