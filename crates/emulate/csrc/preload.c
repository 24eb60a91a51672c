/* multios preload library: the `shm` and `migrate` mechanisms of `multios emulate`
 * (docs/EMULATOR.md). Loaded with LD_PRELOAD into a dynamically linked program.
 *
 * Interception (both mechanisms): the constructor maps the configuration block (crates/preload-abi)
 * in the file named by MULTIOS_EMU_CONFIG,
 * installs a SIGSYS handler and turns on Syscall User Dispatch (SUD) in the thread, so a system call
 * made outside this library's exempt range raises SIGSYS. The handler serves the call and, like
 * lazypoline, rewrites the 2-byte `syscall` at the site into `call *%rax` (ff d0): the next call
 * from that site jumps to address rax = nr in a page mapped at address 0 (a sled, as in zpoline)
 * and from there to multios_tramp (fast.c), with no signal. The trampoline runs local calls at once
 * and hands delegated ones to multios_delegate:
 *  - shm: posted to the thread's mailbox, served by its delegate thread pinned on the control CPUs,
 *    which spins f_c, makes the call, spins f_c and replies (the thread spins meanwhile);
 *  - migrate: the thread moves to the control CPUs, spins f_c, makes the call, spins f_c, moves back.
 * Calls that act on the signal frame, the stack or the thread are never rewritten and never
 * delegated: rt_sigreturn (finished from the exempt range with the program's frame untouched),
 * rt_sigprocmask (applied to the mask sigreturn restores; SIGSYS is kept unblocked), rt_sigaction
 * (SIGSYS removed from the handler's mask; a program's own SIGSYS handler is ignored), clone, clone3,
 * fork, vfork, execve, execveat, rt_sigsuspend (run at a local stub in the program's own context),
 * sigaltstack (in the program's context too: altstack.c keeps its setting apart from the alternate
 * stack the handlers run on), exit_group (statistics are written first).
 * New threads get SUD and a delegate through a pthread_create wrapper, forked children through
 * pthread_atfork. Counts and delivered costs go to the stats directory at exit_group and execve. */
#include "preload.h"
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>
#include <x86intrin.h>

#ifndef PR_SET_SYSCALL_USER_DISPATCH
#define PR_SET_SYSCALL_USER_DISPATCH 59
#define PR_SYS_DISPATCH_OFF 0
#define PR_SYS_DISPATCH_ON 1
#endif
#define SEL_ALLOW 0
#define SEL_BLOCK 1

HIDDEN int multios_mode;
HIDDEN unsigned char multios_kind[NR_MAX];
HIDDEN struct cost multios_costs[NR_MAX];
HIDDEN uint32_t multios_expq[4096];
HIDDEN cpu_set_t multios_compute_set, multios_control_set;
HIDDEN volatile uint64_t multios_del_cnt[NR_MAX], multios_loc_cnt[NR_MAX], multios_nodelegate;
HIDDEN volatile uint64_t multios_move_out_failed, multios_move_back_failed;
HIDDEN volatile uint64_t multios_loc_ticks[NR_MAX];
HIDDEN uint8_t multios_timing;
HIDDEN uint64_t multios_samples[MAX_SAMPLES];
HIDDEN volatile uint64_t multios_nsamp;
HIDDEN volatile uint64_t multios_fork_gen;
HIDDEN uint64_t multios_patience_ticks = INT64_MAX; /* compared signed (fast.c): never, until configured */
__thread struct mbox *multios_my_mbox __attribute__((tls_model("initial-exec")));
__thread uint64_t multios_my_gen __attribute__((tls_model("initial-exec")));

static int active, rewrite, rewrite_ok, realtime, exit_group_delegated;
static void after_local(long nr, long a0, long a1, long a2, long r);
static int before_local(long nr);
/* Eager mode (the configuration's `intercept`): every site rewritten at start-up; sud_on = 0 when that
 * succeeded for every 0f 05 pair in the process (then SUD is never turned on). */
static int want_eager, eager, sud_on = 1;
static int any_delegated; /* the policy delegates something: shm threads need a delegate */
static struct rw_stats rw_start, rw_late;
static unsigned char stub_local[NR_MAX];
static char stats_dir[512];
static uint64_t dump_seq, idle_ticks, hv_exit_ticks, rewritten;
/* The control CPUs overlap the compute CPUs (`--control-cpus` sharing one with `--compute-cpus`):
 * a delegate may run on its caller's CPU, so it sleeps as soon as it has replied (delegate_main). */
static int shares_cpu;
/* This image's (or fork child's) identity in the statistics: its marker file at start and the `I`
 * line of its dumps, so that a process that never dumped (killed by a signal) is counted. */
static uint64_t image_id;
static volatile int rewrite_lock;
static __thread char selector __attribute__((tls_model("initial-exec")));
static int (*real_pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

#define raw6 multios_xsys

/* The stub for the call site whose return address is `ret`, or NULL when all stubs are taken.
 * Slots are written once and never change, so concurrent threads need no lock. */
static char *stub_for(uint64_t ret) {
    for (int i = 0; i < NSTUBS; i++) {
        uint64_t v = __atomic_load_n(&multios_slots[i], __ATOMIC_ACQUIRE);
        if (v == 0) {
            uint64_t zero = 0;
            if (__atomic_compare_exchange_n(&multios_slots[i], &zero, ret, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                return multios_stubs + 16 * i;
            v = zero;
        }
        if (v == ret)
            return multios_stubs + 16 * i;
    }
    return NULL;
}

static char *put_u64(char *p, uint64_t v) {
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = '0' + v % 10;
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

/* Writes "STATS_DIR/PID-" into `path` (600 bytes); returns where the rest of the name goes. */
static char *stats_file(char *path) {
    char *p = path;
    size_t l = strlen(stats_dir);
    memcpy(p, stats_dir, l);
    p += l;
    *p++ = '/';
    p = put_u64(p, (uint64_t)raw6(SYS_getpid, 0, 0, 0, 0, 0, 0));
    *p++ = '-';
    return p;
}

/* This image's statistics file, opened when it starts (STATS_DIR/PID-ID.stats, close-on-exec):
 * dump_stats writes through it, so the counts reach multios after the program dropped its
 * privileges (setuid to a user who cannot write STATS_DIR) or changed its root (chroot: the
 * path no longer leads there) — before, they were lost. Kept at a high descriptor number, out of
 * the way of the program's own lowest-free-number opens; its device and inode are checked before
 * each use (a program that closed every descriptor, or put one of its own at that number). A
 * file may hold several dumps (an execve that failed, a vfork child's exec): each has one E line. */
static int stats_fd = -1;
static uint64_t stats_dev, stats_ino;

static int stats_fd_ours(void) {
    struct stat st;
    return stats_fd >= 0 && raw6(SYS_fstat, stats_fd, (long)&st, 0, 0, 0, 0) == 0 && (uint64_t)st.st_dev == stats_dev &&
           (uint64_t)st.st_ino == stats_ino;
}

static void open_stats(void) {
    if (stats_fd_ours()) /* the parent's (a fork child: a copy of its descriptor) */
        raw6(SYS_close, stats_fd, 0, 0, 0, 0, 0);
    stats_fd = -1;
    char path[600], *p = stats_file(path);
    p = put_u64(p, image_id);
    memcpy(p, ".stats", 7);
    long fd = raw6(SYS_openat, AT_FDCWD, (long)path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644, 0, 0);
    if (fd < 0)
        return;
    struct {
        uint64_t cur, max;
    } lim;
    long low = 0;
    if (raw6(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, (long)&lim, 0, 0) == 0)
        low = lim.cur >= 1024 ? 1000 : lim.cur > 64 ? (long)lim.cur - 16 : 0;
    if (low > fd) {
        long high = raw6(SYS_fcntl, fd, F_DUPFD_CLOEXEC, low, 0, 0, 0);
        if (high >= 0) {
            raw6(SYS_close, fd, 0, 0, 0, 0, 0);
            fd = high;
        }
    }
    struct stat st;
    if (raw6(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) != 0) {
        raw6(SYS_close, fd, 0, 0, 0, 0, 0);
        return;
    }
    stats_dev = (uint64_t)st.st_dev;
    stats_ino = (uint64_t)st.st_ino;
    stats_fd = (int)fd;
}

/* Creates STATS_DIR/PID-ID.start: this image of the process has started (it dumps its counts at
 * execve and exit_group; one that dies by a signal never does, which the report counts). */
static void mark_started(void) {
    if (!stats_dir[0])
        return;
    image_id = __rdtsc();
    char path[600], *p = stats_file(path);
    p = put_u64(p, image_id);
    memcpy(p, ".start", 7);
    long fd = raw6(SYS_openat, AT_FDCWD, (long)path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644, 0, 0);
    if (fd >= 0)
        raw6(SYS_close, fd, 0, 0, 0, 0, 0);
    open_stats();
}

/* Writes this process's counts and samples to its statistics file (open_stats; by its path,
 * STATS_DIR/PID-SEQ-TSC.stats, when there is none) and resets them. */
static void dump_stats(void) {
    if (!stats_dir[0])
        return;
    int fd = stats_fd, own = 0;
    if (!stats_fd_ours()) {
        /* No file from the start (or the program closed it): one made now, by its path. */
        char path[600], *p = stats_file(path);
        p = put_u64(p, dump_seq++);
        /* An exec'd image keeps the pid and restarts dump_seq: the TSC keeps its file from
         * overwriting the one the old image wrote just before the exec. */
        *p++ = '-';
        p = put_u64(p, __rdtsc());
        memcpy(p, ".stats", 7);
        fd = (int)raw6(SYS_openat, AT_FDCWD, (long)path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644, 0, 0);
        if (fd < 0)
            return;
        own = 1;
    }
    static char buf[1 << 16];
    size_t n = 0;
#define FLUSH()                                                                                            \
    do {                                                                                                   \
        raw6(SYS_write, fd, (long)buf, (long)n, 0, 0, 0);                                                  \
        n = 0;                                                                                             \
    } while (0)
#define LINE(tag, a, b)                                                                                    \
    do {                                                                                                   \
        if (n > sizeof buf - 64)                                                                           \
            FLUSH();                                                                                       \
        char *q = buf + n;                                                                                 \
        *q++ = tag;                                                                                        \
        *q++ = ' ';                                                                                        \
        q = put_u64(q, a);                                                                                 \
        *q++ = ' ';                                                                                        \
        q = put_u64(q, b);                                                                                 \
        *q++ = '\n';                                                                                       \
        n = (size_t)(q - buf);                                                                             \
    } while (0)
    for (int i = 0; i < NR_MAX; i++) {
        if (multios_del_cnt[i])
            LINE('D', (uint64_t)i, multios_del_cnt[i]);
        if (multios_loc_cnt[i])
            LINE('L', (uint64_t)i, multios_loc_cnt[i]);
        if (multios_loc_ticks[i])
            LINE('T', (uint64_t)i, multios_loc_ticks[i]);
        multios_del_cnt[i] = multios_loc_cnt[i] = multios_loc_ticks[i] = 0;
    }
    LINE('R', rewritten + rw_start.rewritten + rw_late.rewritten, (uint64_t)rewrite_ok);
    LINE('E', (uint64_t)eager, (uint64_t)!sud_on);
    LINE('U', rw_start.unsure, rw_late.unsure);
    LINE('Z', rw_start.redzone + rw_late.redzone, 0);
    LINE('C', rw_start.cached + rw_late.cached, rw_start.stored + rw_late.stored);
    LINE('N', multios_nodelegate, 0);
    multios_nodelegate = 0;
    /* M: migrate's moves to the control CPUs and back that sched_setaffinity refused. */
    LINE('M', multios_move_out_failed, multios_move_back_failed);
    multios_move_out_failed = multios_move_back_failed = 0;
    LINE('I', (uint64_t)raw6(SYS_getpid, 0, 0, 0, 0, 0, 0), image_id);
/* A count of execve calls (line `tag`) and the first one's path (line `ptag`), then reset. */
#define EXECS(tag, count, ptag, path)                                                                      \
    do {                                                                                                   \
        if (count) {                                                                                       \
            LINE(tag, count, 0);                                                                           \
            size_t pl = strnlen(path, sizeof path);                                                        \
            if (n > sizeof buf - pl - 4)                                                                   \
                FLUSH();                                                                                   \
            buf[n++] = ptag;                                                                               \
            buf[n++] = ' ';                                                                                \
            memcpy(buf + n, path, pl);                                                                     \
            n += pl;                                                                                       \
            buf[n++] = '\n';                                                                               \
            count = 0;                                                                                     \
        }                                                                                                  \
    } while (0)
    /* W: execve calls whose environment dropped the library; X: whose target is statically
     * linked; B and P: the first one's path of each. */
    EXECS('W', multios_bare_execs, 'B', multios_bare_exec_path);
    EXECS('X', multios_static_execs, 'P', multios_static_exec_path);
    uint64_t ns = multios_nsamp < MAX_SAMPLES ? multios_nsamp : MAX_SAMPLES;
    for (uint64_t i = 0; i < ns; i++)
        LINE('S', multios_samples[i], 0);
    multios_nsamp = 0;
    FLUSH();
    if (own)
        raw6(SYS_close, fd, 0, 0, 0, 0, 0);
}

/* exit_group from either interception: counted (delegated or local, as the policy says), the
 * statistics written, and the process ends without the f_c delay. */
__attribute__((noreturn)) static void exit_group_now(long code) {
    if (exit_group_delegated)
        multios_del_cnt[SYS_exit_group]++;
    else
        multios_loc_cnt[SYS_exit_group]++;
    dump_stats();
    for (;;)
        raw6(SYS_exit_group, code, 0, 0, 0, 0, 0);
}

static void enable_sud(void) {
    multios_altstack_thread(); /* the SIGSYS frame off the program's stack (altstack.c) */
    selector = SEL_BLOCK;
    multios_sud_thread = 1;
    raw6(SYS_prctl, PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, (long)multios_exempt_begin,
         (long)(multios_exempt_end - multios_exempt_begin), (long)&selector, 0);
}

/* Rewrites the `syscall` (0f 05) at `site` into `call *%rax` (ff d0). */
static void try_rewrite(unsigned char *site) {
    if (!rewrite_ok || ((char *)site >= multios_exempt_begin && (char *)site < multios_fallback_end + 1) ||
        multios_never_rewrite((uint64_t)site))
        return;
    while (__atomic_exchange_n(&rewrite_lock, 1, __ATOMIC_ACQUIRE))
        _mm_pause();
    if (site[0] == 0x0f && site[1] == 0x05) {
        uintptr_t a = (uintptr_t)site & ~4095UL, b = ((uintptr_t)site + 1) & ~4095UL;
        size_t len = b - a + 4096;
        if (raw6(SYS_mprotect, (long)a, (long)len, PROT_READ | PROT_WRITE | PROT_EXEC, 0, 0, 0) == 0) {
            __atomic_store_n(&site[1], 0xd0, __ATOMIC_RELAXED);
            __atomic_store_n(&site[0], 0xff, __ATOMIC_RELEASE);
            raw6(SYS_mprotect, (long)a, (long)len, PROT_READ | PROT_EXEC, 0, 0, 0);
            rewritten++;
        }
    }
    __atomic_store_n(&rewrite_lock, 0, __ATOMIC_RELEASE);
}

struct ksigaction {
    void *handler;
    unsigned long flags;
    void *restorer;
    uint64_t mask;
};

/* The program's handlers, installed behind wrap_handler (the program is shown its own action when
 * it asks: sigaction_call), for two reasons:
 * - SIGSEGV while the trampoline's page sits at address 0, execute-only: a NULL-pointer access
 *   faults there with SEGV_PKUERR, where natively (nothing mapped) it is SEGV_MAPERR, and runtimes
 *   read the code — Go's treats an access error it does not expect as fatal ("unexpected fault
 *   address 0x0") instead of a nil-pointer panic; the wrapper gives the handler the native code;
 * - every signal under shm with delegates: the wrapper notes which signal's handler ran on the
 *   thread (multios_last_sig, multios_sig_seq), so that a delegated call the thread waits for is
 *   interrupted as Linux would interrupt it (fast.c; the kick signal below);
 * - every signal while threads have the library's alternate stack (SUD on): its frame made as
 *   Linux would make it when the program has no stack of its own, a handler with SA_ONSTACK run
 *   on the interrupted stack then (altstack.c, issue #4). */
static struct ksigaction prog_act[65]; /* the program's actions of the wrapped signals */
static int kick_on;                    /* the kick signal's handler is installed (below) */
static volatile uint64_t wrapped;      /* bit sig-1: the signal's handler is behind wrap_handler */

static void wrap_handler(int sig, siginfo_t *si, void *uc) {
    multios_last_sig = sig;
    multios_sig_seq++;
    if (sig == SIGSEGV && si->si_code == SEGV_PKUERR && (uintptr_t)si->si_addr < 4096) {
        si->si_code = SEGV_MAPERR;
        si->si_pkey = 0;
    }
    struct ksigaction a = prog_act[sig];
    if (a.flags & SA_RESETHAND) { /* the kernel reset the disposition (ours) as it delivered */
        prog_act[sig].handler = SIG_DFL;
        __atomic_fetch_and(&wrapped, ~(1ULL << (sig - 1)), __ATOMIC_RELAXED);
    }
    if (a.handler == SIG_DFL || a.handler == SIG_IGN)
        return; /* (changed while this delivery was on its way) */
    /* The frame as Linux would have made it without the library's stack (altstack.c); with
     * SA_ONSTACK the handler may then run on the interrupted stack, not returning here. */
    multios_altstack_leave(sig, si, uc, a.handler, (a.flags & SA_ONSTACK) != 0);
    if (a.flags & SA_SIGINFO)
        ((void (*)(int, siginfo_t *, void *))a.handler)(sig, si, uc);
    else
        ((void (*)(int))a.handler)(sig);
}

/* ---- the kick signal (shm): interrupting a delegate's blocking call ----
 *
 * When a handler of the program runs while one of its threads waits for a delegated call that
 * Linux would then interrupt (fast.c: EINTR unless SA_RESTART, or always for poll, nanosleep and
 * the like), the waiting thread queues MULTIOS_KICK_SIG to its delegate, whose handler
 * (kick_handler) only counts it: the delegate's call returns EINTR, as the program's would have.
 * Before, such a call went on (a Python program's SIGALRM or Ctrl-C left it blocked in read on an
 * empty pipe for ever). Delegates block every other signal. The program's own action for the
 * kick signal is kept apart (prog_kick) and shown to it; the library's handler stays installed
 * and gives the program's handler the signals that are not kicks. */
static struct ksigaction prog_kick; /* the program's action for MULTIOS_KICK_SIG (zero: SIG_DFL) */
#define MAX_DELEGATES 1024
static volatile int32_t delegate_tids[MAX_DELEGATES]; /* live delegates of this process */

static void note_delegate(int32_t tid, int add) {
    for (int i = 0; i < MAX_DELEGATES; i++) {
        int32_t want = add ? 0 : tid, put = add ? tid : 0;
        if (__atomic_compare_exchange_n(&delegate_tids[i], &want, put, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return;
    }
}

static int is_delegate(int32_t tid) {
    for (int i = 0; i < MAX_DELEGATES; i++)
        if (__atomic_load_n(&delegate_tids[i], __ATOMIC_ACQUIRE) == tid)
            return 1;
    return 0;
}

/* Runs on a delegate (a kick) or, for a signal that is not one, on whichever thread took it. A
 * delegate has no TLS of its own: nothing here touches thread-local state. */
static void kick_handler(int sig, siginfo_t *si, void *ucv) {
    long pid = raw6(SYS_getpid, 0, 0, 0, 0, 0, 0);
    int32_t tid = (int32_t)raw6(SYS_gettid, 0, 0, 0, 0, 0, 0);
    if (si->si_code == SI_QUEUE && si->si_pid == pid && is_delegate(tid)) {
        struct mbox *m = si->si_value.sival_ptr;
        if (m && m->tid == tid)
            __atomic_fetch_add(&m->kicks_seen, 1, __ATOMIC_ACQ_REL);
        return;
    }
    ucontext_t *uc = ucv;
    if (is_delegate(tid)) {
        /* The program's signal, taken by a delegate because every thread of the program blocks
         * it: queued again for the process, and blocked in this delegate from now on. */
        sigaddset(&uc->uc_sigmask, sig);
        raw6(SYS_rt_sigqueueinfo, pid, sig, (long)si, 0, 0, 0);
        return;
    }
    struct ksigaction a = prog_kick;
    if (a.handler == SIG_IGN)
        return;
    if (a.handler == SIG_DFL) {
        /* Its default action (termination): made again with the default disposition, delivered
         * once this handler returns and the signal is unblocked. */
        struct ksigaction d = {SIG_DFL, 0, 0, 0};
        raw6(SYS_rt_sigaction, sig, (long)&d, 0, 8, 0, 0);
        raw6(SYS_tgkill, pid, tid, sig, 0, 0, 0);
        return;
    }
    if (a.flags & SA_RESETHAND)
        prog_kick.handler = SIG_DFL;
    if (a.flags & SA_SIGINFO)
        ((void (*)(int, siginfo_t *, void *))a.handler)(sig, si, ucv);
    else
        ((void (*)(int))a.handler)(sig);
}

/* The library's action for the kick signal, with the program's mask; no SA_RESTART (a kick must
 * interrupt the delegate's call). */
static int install_kick(void) {
    /* On the alternate stack unless the program's handler for the signal asked otherwise. */
    int own = prog_kick.handler != SIG_DFL && prog_kick.handler != SIG_IGN;
    unsigned long onstack = !own || (prog_kick.flags & SA_ONSTACK) ? SA_ONSTACK : 0;
    struct ksigaction sa = {(void *)kick_handler, SA_SIGINFO | 0x04000000 /* SA_RESTORER */ | onstack,
                            multios_restorer, prog_kick.mask};
    return (int)raw6(SYS_rt_sigaction, MULTIOS_KICK_SIG, (long)&sa, 0, 8, 0, 0);
}

/* rt_sigaction of the kick signal as the program made it: recorded, the library's handler kept. */
static long kick_sigaction(const struct ksigaction *act, struct ksigaction *old, long size) {
    if (size != 8)
        return -EINVAL;
    struct ksigaction mine = prog_kick;
    /* Reads and writes through the kernel, so that bad pointers give EFAULT as natively: the
     * library's own action read into `old` first, then replaced by the program's. */
    long r = raw6(SYS_rt_sigaction, MULTIOS_KICK_SIG, 0, (long)old, 8, 0, 0);
    if (r != 0)
        return r;
    if (old)
        *old = mine;
    if (act) {
        struct ksigaction a;
        struct iovec to = {&a, sizeof a}, from = {(void *)act, sizeof a};
        if (raw6(SYS_process_vm_readv, raw6(SYS_getpid, 0, 0, 0, 0, 0, 0), (long)&to, 1, (long)&from, 1, 0) !=
            (long)sizeof a)
            return -EFAULT;
        prog_kick = a;
        install_kick();
    }
    return 0;
}

/* Before an execve: the new image inherits an ignored kick signal as ignored (handlers are reset
 * by the kernel; the library's is one). */
static void kick_before_exec(void) {
    if (kick_on && prog_kick.handler == SIG_IGN) {
        struct ksigaction ign = {SIG_IGN, 0, 0, 0};
        raw6(SYS_rt_sigaction, MULTIOS_KICK_SIG, (long)&ign, 0, 8, 0, 0);
    }
}

/* rt_sigaction as the program made it; a handler goes behind wrap_handler when the library needs
 * to see it (SIGSEGV with the trampoline's page mapped; every signal under shm with delegates).
 * The kernel reads `act` and writes `old` first (so bad pointers give EFAULT as natively); `old`
 * then gets the program's own action in place of the wrapper. */
static long sigaction_call(long sig, const struct ksigaction *act, struct ksigaction *old, long size) {
    if (sig == MULTIOS_KICK_SIG && kick_on)
        return kick_sigaction(act, old, size);
    int wrap = sig >= 1 && sig <= 64 && sig != SIGKILL && sig != SIGSTOP &&
               (kick_on || (sig == SIGSEGV && rewrite_ok) || multios_altstack_on);
    if (!wrap)
        return raw6(SYS_rt_sigaction, sig, (long)act, (long)old, size, 0, 0);
    uint64_t bit = 1ULL << (sig - 1);
    struct ksigaction before = prog_act[sig];
    int was = (wrapped & bit) != 0;
    long r = raw6(SYS_rt_sigaction, sig, (long)act, (long)old, size, 0, 0);
    if (r != 0)
        return r;
    if (old && was && old->handler == (void *)wrap_handler)
        *old = before;
    if (act) {
        struct ksigaction k;
        if (raw6(SYS_rt_sigaction, sig, 0, (long)&k, 8, 0, 0) != 0)
            return 0;
        __atomic_fetch_and(&wrapped, ~bit, __ATOMIC_RELAXED);
        if (k.handler != SIG_DFL && k.handler != SIG_IGN) {
            prog_act[sig] = k;
            struct ksigaction w = k;
            w.handler = (void *)wrap_handler;
            w.flags |= SA_SIGINFO;
            if (raw6(SYS_rt_sigaction, sig, (long)&w, 0, 8, 0, 0) == 0)
                __atomic_fetch_or(&wrapped, bit, __ATOMIC_RELAXED);
        }
    }
    return 0;
}

static void on_sigsys(int sig, siginfo_t *si, void *ctx) {
    (void)sig;
    if (si->si_code != 2 /* SYS_USER_DISPATCH */)
        return; /* a SIGSYS another process (or the program itself) sent: not a trapped call */
    ucontext_t *uc = ctx;
    greg_t *g = uc->uc_mcontext.gregs;
    selector = SEL_ALLOW;
    long nr = si->si_syscall;
    /* From the trampoline's SIGSYS route, the site's return address is at [rsp] (it was in r11
     * once, which the `syscall` instruction overwrites with rflags before SUD traps: every call
     * through a rewritten site of a SIGSYS-routed number then returned to the `call` itself). */
    int via_tramp = (char *)g[REG_RIP] == multios_fallback_end;
    uint64_t ret = (uint64_t)g[REG_RIP];
    if (via_tramp) {
        ret = *(uint64_t *)g[REG_RSP];
        g[REG_RSP] += 8;
    }
    g[REG_RIP] = (greg_t)ret;
    if (nr < 0 || nr >= NR_MAX) {
        g[REG_RAX] = raw6(nr, g[REG_RDI], g[REG_RSI], g[REG_RDX], g[REG_R10], g[REG_R8], g[REG_R9]);
        selector = SEL_BLOCK;
        return;
    }
    if (nr == SYS_rt_sigreturn) {
        /* The program's own restorer: finish it from the exempt range with its frame untouched. */
        multios_loc_cnt[nr]++;
        g[REG_RAX] = SYS_rt_sigreturn;
        g[REG_RIP] = (greg_t)multios_sigreturn_syscall;
        selector = SEL_BLOCK;
        return;
    }
    if (nr == SYS_rt_sigprocmask) {
        /* Applied to the mask that sigreturn restores, so it acts on the program's own mask;
         * SIGSYS is never blocked (it would turn the next intercepted call into a kill). */
        multios_loc_cnt[nr]++;
        uint64_t cur, n = 0, *set = (uint64_t *)g[REG_RSI], *old = (uint64_t *)g[REG_RDX];
        memcpy(&cur, &uc->uc_sigmask, 8);
        long how = g[REG_RDI], r = 0;
        if (g[REG_R10] != 8)
            r = -EINVAL;
        else if (set && how != SIG_BLOCK && how != SIG_UNBLOCK && how != SIG_SETMASK)
            r = -EINVAL;
        else {
            if (set)
                n = *set;
            if (old)
                *old = cur;
            if (set)
                cur = how == SIG_BLOCK ? (cur | n) : how == SIG_UNBLOCK ? (cur & ~n) : n;
            cur &= ~((1ULL << (SIGKILL - 1)) | (1ULL << (SIGSTOP - 1)) | (1ULL << (SIGSYS - 1)));
            memcpy(&uc->uc_sigmask, &cur, 8);
        }
        g[REG_RAX] = r;
        selector = SEL_BLOCK;
        return;
    }
    if (nr == SYS_rt_sigaction) {
        /* The program's handlers must never block SIGSYS (their own calls and their sigreturn are
         * intercepted); a program's own SIGSYS handler is not installed (the call reports success). */
        multios_loc_cnt[nr]++;
        const struct ksigaction *act = (const struct ksigaction *)g[REG_RSI];
        if (g[REG_RDI] == SIGSYS && act) {
            g[REG_RAX] = 0;
        } else if (act) {
            struct ksigaction k = *act;
            k.mask &= ~(1ULL << (SIGSYS - 1));
            g[REG_RAX] = sigaction_call(g[REG_RDI], &k, (struct ksigaction *)g[REG_RDX], g[REG_R10]);
        } else {
            g[REG_RAX] = sigaction_call(g[REG_RDI], NULL, (struct ksigaction *)g[REG_RDX], g[REG_R10]);
        }
        selector = SEL_BLOCK;
        return;
    }
    if (nr == SYS_rt_sigsuspend && g[REG_RSI] == 8 && g[REG_RDI]) {
        /* Suspend with the requested mask minus SIGSYS (copied to a per-thread buffer). */
        static __thread uint64_t suspend_mask __attribute__((tls_model("initial-exec")));
        suspend_mask = *(uint64_t *)g[REG_RDI] & ~(1ULL << (SIGSYS - 1));
        g[REG_RDI] = (greg_t)&suspend_mask;
    }
    if (nr == SYS_sigaltstack && multios_altstack_mine()) {
        /* Resumed in the program's context (not on the handler's frame, whose sigreturn would undo
         * a change) where the program's own setting is kept apart from the library's stack. */
        g[REG_RCX] = (greg_t)ret;
        g[REG_RIP] = (greg_t)multios_altstack_entry;
        selector = SEL_BLOCK;
        return;
    }
    if (nr == SYS_clone || nr == SYS_clone3 || nr == SYS_fork || nr == SYS_vfork) {
        /* Resume at the trampoline (inside the exempt range) as if the site had been rewritten:
         * its clone route gives the child its `solo` flag (struct vf in preload.h), which a
         * local stub cannot. The return address goes where `call *%rax` would have put it. */
        g[REG_RSP] -= 8;
        *(uint64_t *)g[REG_RSP] = ret;
        g[REG_RAX] = nr;
        g[REG_RIP] = (greg_t)multios_tramp;
        selector = SEL_BLOCK;
        return;
    }
    if (stub_local[nr]) {
        char *stub = stub_for(ret);
        if (stub)
            multios_loc_cnt[nr]++; /* before the dump: a successful execve is counted too */
        if (nr == SYS_execve || nr == SYS_execveat) {
            multios_note_exec(nr, g[REG_RDI], nr == SYS_execve ? g[REG_RDX] : g[REG_R10]);
            kick_before_exec();
            dump_stats(); /* the counts so far; the new image starts its own */
        }
        if (stub) {
            g[REG_RAX] = nr;
            g[REG_RIP] = (greg_t)stub;
            selector = SEL_BLOCK;
            return;
        }
    }
    if (nr == SYS_exit_group)
        exit_group_now(g[REG_RDI]);
    if (!via_tramp && !(multios_kind[nr] & R_VIA_SIGSYS))
        try_rewrite((unsigned char *)ret - 2);
    if (multios_kind[nr] == R_DELEGATED) {
        /* The wait for the delegate may be interrupted by a handler (a program's, or glibc's
         * setxid broadcast changing this thread's credentials): its calls are intercepted like any
         * other (the wait itself makes only calls from the exempt range), so a credential change
         * there renews the delegate and its other calls run in place. */
        selector = SEL_BLOCK;
        long r = multios_delegate(nr, g[REG_RDI], g[REG_RSI], g[REG_RDX], g[REG_R10], g[REG_R8], g[REG_R9]);
        selector = SEL_ALLOW;
        g[REG_RAX] = r;
    } else {
        multios_loc_cnt[nr]++;
        before_local(nr);
        g[REG_RAX] = raw6(nr, g[REG_RDI], g[REG_RSI], g[REG_RDX], g[REG_R10], g[REG_R8], g[REG_R9]);
        after_local(nr, g[REG_RDI], g[REG_RSI], g[REG_RDX], g[REG_RAX]);
    }
    selector = SEL_BLOCK;
}



/* SA_NODEFER: an execve re-issued from the handler must not pass a blocked SIGSYS on. */
static int install(int sig, void (*h)(int, siginfo_t *, void *), unsigned long extra) {
    struct ksigaction sa = {(void *)h, SA_SIGINFO | 0x04000000 /* SA_RESTORER */ | extra, multios_restorer, 0};
    return (int)raw6(SYS_rt_sigaction, sig, (long)&sa, 0, 8, 0, 0);
}

/* -ln(u) for u in (0,1] without libm: ln of the mantissa by its atanh series, plus the exponent. */
static double neg_ln(double u) {
    union {
        double d;
        uint64_t b;
    } v = {u};
    int e = (int)((v.b >> 52) & 0x7ff) - 1023;
    v.b = (v.b & ((1ULL << 52) - 1)) | (1023ULL << 52); /* mantissa in [1,2) */
    double m = v.d, y = (m - 1) / (m + 1), y2 = y * y, s = 0, t = y;
    for (int k = 1; k < 60; k += 2) {
        s += t / k;
        t *= y2;
    }
    return -(2 * s + e * 0.6931471805599453);
}

/* ---- shm delegate threads ---- */

/* The request that ends a delegate thread (not a system call number). */
#define DELEGATE_RETIRE (-1L)

/* The calling thread's own CPU-time clock (CLOCK_THREAD_CPUTIME_ID, or a per-thread clock with
 * tid 0: MAKE_THREAD_CPUCLOCK(0, which)) made by the delegate would be the delegate's: a program
 * timing itself with it read 0. Such a clock argument becomes the served thread's clock, which
 * another thread of the same process may read (and arm timers on). */
static long served_thread_clock(long nr, long clock, int32_t app_tid) {
    if (nr != SYS_clock_gettime && nr != SYS_clock_getres && nr != SYS_timer_create && nr != SYS_clock_nanosleep)
        return clock;
    int thread_self = clock == CLOCK_THREAD_CPUTIME_ID || (clock < 0 && (clock & 4) && (~clock >> 3) == 0);
    if (!thread_self || app_tid <= 0)
        return clock;
    long which = clock == CLOCK_THREAD_CPUTIME_ID ? 2 /* CPUCLOCK_SCHED */ : (clock & 3);
    return (long)((~(unsigned long)(long)app_tid) << 3) | which | 4;
}

/* perf_event_open(attr, pid 0, …) measures the calling thread: made by the delegate it counted
 * the delegate (a program's task-clock counter on itself read ≈ 0 while it spun). Pid 0 becomes
 * the served thread's tid, which another thread of the same process may name. */
static long served_thread_pid(long nr, long pid, int32_t app_tid) {
    return nr == SYS_perf_event_open && pid == 0 && app_tid > 0 ? (long)app_tid : pid;
}

/* Sleeps until a request comes (state 1). Whatever else the state is — 0, or 2 while the reply
 * has not been taken yet — the delegate sleeps on it: it used to sleep on 0 only, and spun while
 * its reply waited for a caller that could not run (on a shared CPU) or was descheduled. Dekker
 * with the caller: sleeping = 1, then state; it stores state = 1, then reads sleeping. */
static void delegate_sleep(struct mbox *m) {
    __atomic_store_n(&m->sleeping, 1, __ATOMIC_SEQ_CST);
    uint32_t s = __atomic_load_n(&m->state, __ATOMIC_SEQ_CST);
    if (s != 1)
        raw6(SYS_futex, (long)&m->state, FUTEX_WAIT, s, 0, 0, 0);
    __atomic_store_n(&m->sleeping, 0, __ATOMIC_SEQ_CST);
}

/* A bare thread (multios_spawn): no libc, no TLS of its own, all signals blocked. */
static void delegate_main(void *p) {
    struct mbox *m = p;
    uint64_t last = __rdtsc(), polls = 0, exited = last;
    for (;;) {
        uint32_t s = __atomic_load_n(&m->state, __ATOMIC_ACQUIRE);
        if (s == 1) {
            long nr = m->nr;
            if (nr == DELEGATE_RETIRE) {
                multios_own_cpu_retire(); /* its CPU time is still not the program's (owncpu.c) */
                raw6(SYS_exit, 0, 0, 0, 0, 0, 0); /* the kernel then clears m->tid */
            }
            multios_record(multios_spin(multios_draw(nr, &m->rng)));
            __atomic_store_n(&m->call_t0, __rdtsc(), __ATOMIC_RELAXED); /* the caller's clock for "blocked" */
            long ret = raw6(nr, served_thread_clock(nr, m->a[0], m->app_tid), served_thread_pid(nr, m->a[1], m->app_tid),
                            m->a[2], m->a[3], m->a[4], m->a[5]);
            __atomic_store_n(&m->call_t0, 0, __ATOMIC_RELAXED);
            multios_own_cpu_fix(nr, m->a[0], m->a[1], ret); /* the program's CPU time, not ours */
            multios_record(multios_spin(multios_draw(nr, &m->rng)));
            m->nr = ret;
            __atomic_store_n(&m->state, 2, __ATOMIC_SEQ_CST);
            if (__atomic_load_n(&m->waiting, __ATOMIC_SEQ_CST)) /* the caller slept: a blocking call */
                raw6(SYS_futex, (long)&m->state, FUTEX_WAKE, 1, 0, 0, 0);
            last = __rdtsc();
        } else if (shares_cpu) {
            /* On its caller's CPU a delegate must not wait for the next request by spinning: the
             * caller, which has to take the reply and make that request, could not run (a
             * SCHED_FIFO delegate kept a SCHED_OTHER caller off the CPU until the kernel's
             * real-time throttling stopped it, ≈ 1 s a call; a SCHED_OTHER one for its time
             * slice). It sleeps at once; the caller wakes it with the next request. */
            delegate_sleep(m);
        } else if (++polls % 64 != 0) {
            _mm_pause(); /* check the idle deadline every 64 polls only */
        } else if (__rdtsc() - last <= idle_ticks / 100) {
            _mm_pause(); /* requests in quick succession: no system call between them */
        } else if (__rdtsc() - last <= idle_ticks) {
            /* Idle for a while (2 µs of the 200): let the other delegates on this control CPU run
             * (those of the other threads and processes of a pipeline). SCHED_FIFO does not
             * time-slice, so a spinning delegate used to keep another one from serving its request
             * for its whole idle spin; with nobody else runnable sched_yield returns at once. */
            raw6(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
            /* And exits to the hypervisor now and then: on a VM an IPI for a CPU that runs code
             * arrives only at its next exit, and the program's TLB flushes (an munmap, a write to a
             * page that read the zero page) wait for this CPU's answer: 1-3 ms each, against
             * ≈ hv_exit_ticks with the exits (multios_host::hvexit). cpuid always exits. */
            if (hv_exit_ticks && __rdtsc() - last >= hv_exit_ticks && __rdtsc() - exited >= hv_exit_ticks) {
                unsigned a = 0, b, c = 0, d;
                __asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
                exited = __rdtsc();
            }
        } else {
            delegate_sleep(m);
            last = __rdtsc();
        }
    }
}

#define DELEGATE_STACK (64 * 1024)

/* Gives the calling thread its own delegate thread (shm). Only raw system calls: creating it is
 * the library's business, not the program's (none of it is counted, in either interception). */
static void start_delegate(void) {
    /* No delegate when nothing is delegated: a second thread sharing the file table makes the
     * kernel take a reference and the file-position lock on every read and write (fdget_pos),
     * ≈ 50 ns a call here, which a policy-none run must not pay. */
    if (multios_mode != MODE_SHM || !any_delegated)
        return;
    char *base = (char *)raw6(SYS_mmap, 0, 4096 + DELEGATE_STACK, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if ((unsigned long)base >= -4095UL)
        return;
    struct mbox *m = (struct mbox *)base; /* zero-filled, 64-byte aligned */
    /* Inherited: every signal blocked but the kick (its handler only counts it, see fast.c). */
    uint64_t all = kick_on ? ~(1ULL << (MULTIOS_KICK_SIG - 1)) : ~0ULL, old = 0;
    raw6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, (long)&old, 8, 0, 0);
    m->tid = -1; /* until the clone returns: the thread exits only when told to */
    m->app_tid = (int32_t)raw6(SYS_gettid, 0, 0, 0, 0, 0, 0);
    long tid = multios_spawn(base + 4096 + DELEGATE_STACK, delegate_main, m, &m->tid);
    raw6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8, 0, 0);
    if (tid <= 0) {
        raw6(SYS_munmap, (long)base, 4096 + DELEGATE_STACK, 0, 0, 0, 0);
        return;
    }
    m->tid = (int32_t)tid;
    note_delegate((int32_t)tid, 1);
    multios_own_cpu_add((int32_t)tid);
    /* To the control CPUs with its own policy: inheriting a SCHED_FIFO program's policy and CPU
     * would leave it unable to run next to the spinning thread that waits for it. */
    raw6(SYS_sched_setaffinity, tid, sizeof multios_control_set, (long)&multios_control_set, 0, 0, 0);
    struct sched_param sp = {.sched_priority = realtime ? 50 : 0};
    /* Not realtime: the delegate keeps the program's class (SCHED_IDLE or SCHED_OTHER and its nice
     * value, e.g. under `chrt --idle` on a shared machine) unless that is a real-time one. */
    long caller = raw6(SYS_sched_getscheduler, 0, 0, 0, 0, 0, 0);
    int keep = !realtime && caller != SCHED_FIFO && caller != SCHED_RR;
    if (!keep && raw6(SYS_sched_setscheduler, tid, realtime ? SCHED_FIFO : SCHED_OTHER, (long)&sp, 0, 0, 0) != 0) {
        sp.sched_priority = 0;
        raw6(SYS_sched_setscheduler, tid, SCHED_OTHER, (long)&sp, 0, 0, 0);
    }
    multios_my_mbox = m;
    multios_my_gen = multios_fork_gen;
    multios_vf.solo = 0; /* this process has its own delegate now */
}

/* ---- credentials: a delegate acts with the credentials of the thread it serves ----
 *
 * Linux keeps credentials per thread (glibc's setuid reaches every thread it made, with a
 * signal; a delegate is not one of them). A delegate made with root's credentials kept them after
 * the program dropped its own, and the program's delegated calls (openat, getuid, unlink) ran as
 * root: a program that became `nobody` still read /etc/shadow. A call that may change the
 * calling thread's credentials (uids, gids, groups, capabilities, the capability prctls) is
 * therefore made locally, and the thread's delegate is then replaced by one it makes, which
 * starts with its credentials as they are now. Rare calls; a replacement costs a thread's exit
 * and a clone (tens of µs). */

__thread int multios_renew_due __attribute__((tls_model("initial-exec")));

/* Whether call nr (arguments a0, a2), which returned r, may have changed what the caller's
 * delegate must share with it: its credentials, or (unshare, setns, close_range's
 * CLOSE_RANGE_UNSHARE) its namespaces, file table or filesystem context. */
static int changes_creds(long nr, long a0, long a1, long a2, long r) {
    switch (nr) {
    case SYS_unshare:
    case SYS_setns:
        return r == 0;
    case SYS_close_range:
        return r == 0 && (a2 & 2 /* CLOSE_RANGE_UNSHARE */);
    case SYS_setfsuid:
    case SYS_setfsgid:
        return 1; /* they return the previous id, changed or not */
    case SYS_setuid:
    case SYS_setgid:
    case SYS_setreuid:
    case SYS_setregid:
    case SYS_setresuid:
    case SYS_setresgid:
    case SYS_setgroups:
    case SYS_capset:
        return r == 0;
    case SYS_seccomp:
        /* A filter binds the thread that installs it (and threads it makes later); strict mode
         * allows no clone, so no new delegate either. TSYNC reached the delegate already. With
         * SECCOMP_FILTER_FLAG_NEW_LISTENER success is the listener's descriptor (r > 0): a
         * program answering its own notifications saw its filter skipped by its delegated calls. */
        return r >= 0 && a0 == 1 /* SECCOMP_SET_MODE_FILTER */;
    case SYS_landlock_restrict_self:
        return r == 0;
    case SYS_prctl:
        return r == 0 && (a0 == PR_SET_KEEPCAPS || a0 == PR_SET_SECUREBITS || a0 == PR_CAPBSET_DROP ||
                          a0 == PR_CAP_AMBIENT || (a0 == PR_SET_SECCOMP && a1 == 2 /* SECCOMP_MODE_FILTER */) || a0 == PR_SET_NO_NEW_PRIVS);
    }
    return 0;
}

static const int cred_calls[] = {SYS_setuid,    SYS_setgid,    SYS_setreuid, SYS_setregid, SYS_setresuid,
                                 SYS_setresgid, SYS_setfsuid,  SYS_setfsgid, SYS_setgroups, SYS_capset,
                                 SYS_prctl,     SYS_unshare,   SYS_setns,    SYS_close_range,
                                 SYS_seccomp,   SYS_landlock_restrict_self};

/* The calls whose results count the process's CPU time (owncpu.c). */
static const int own_cpu_calls[] = {SYS_clock_gettime, SYS_getrusage, SYS_times};

/* Ends this thread's delegate (waiting until the kernel says it is gone, then unmapping its
 * stack and mailbox) and makes a new one with the thread's present credentials. Without a new
 * one (the clone failed) the thread's calls run in place, uncharged: never on the old one. */
/* Ends this thread's delegate; returns 0 when it had none to end. */
static int retire_delegate(void) {
    struct mbox *old = multios_my_mbox;
    if (!old || multios_my_gen != multios_fork_gen || multios_vf.solo)
        return 0;
    multios_my_mbox = NULL;
    old->nr = DELEGATE_RETIRE;
    __atomic_store_n(&old->state, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&old->sleeping, __ATOMIC_SEQ_CST))
        raw6(SYS_futex, (long)&old->state, FUTEX_WAKE, 1, 0, 0, 0);
    int32_t t = old->tid;
    note_delegate(t, 0);
    while ((t = __atomic_load_n(&old->tid, __ATOMIC_ACQUIRE)) != 0)
        raw6(SYS_futex, (long)&old->tid, FUTEX_WAIT, t, 0, 0, 0);
    raw6(SYS_munmap, (long)old, 4096 + DELEGATE_STACK, 0, 0, 0, 0);
    return 1;
}

HIDDEN void multios_renew_delegate(void) {
    multios_renew_due = 0;
    if (retire_delegate())
        start_delegate();
}

/* The delegate ended for a call that a multi-threaded process may not make (unshare or setns of
 * a user namespace refuses one with EINVAL: `unshare -r` failed under shm), made again after it. */
static __thread int retired_for_call __attribute__((tls_model("initial-exec")));

/* Before a local call (shm): no delegate thread while unshare or setns runs. Returns 1 when the
 * delegate was ended for it. */
static int before_local(long nr) {
    if (nr == SYS_exit) {
        /* The thread ends: so does its delegate (one was left behind per thread, and a program
         * that made threads one after another ran out of them). A vfork child's is its parent's;
         * during its own delegated call (exit from a handler) the mailbox is in use: left. */
        if (multios_mode == MODE_SHM && !multios_vf.solo && !multios_in_call())
            retire_delegate();
        return 0;
    }
    if (multios_mode != MODE_SHM || multios_vf.solo || multios_in_call() || (nr != SYS_unshare && nr != SYS_setns))
        return 0;
    retired_for_call = retire_delegate();
    return retired_for_call;
}

/* After a local call: a new delegate if the call changed the credentials (shm). A vfork or
 * posix_spawn child (solo) makes its calls itself: the delegate it sees is its parent's. During
 * this thread's own delegated call (a signal handler: glibc's setxid broadcast), later. */
static void after_local(long nr, long a0, long a1, long a2, long r) {
    multios_own_cpu_fix(nr, a0, a1, r); /* the process's CPU time less its delegates' (owncpu.c) */
    if (retired_for_call) {
        retired_for_call = 0;
        start_delegate(); /* with what the call changed */
        return;
    }
    if (multios_mode != MODE_SHM || multios_vf.solo || !multios_my_mbox || !changes_creds(nr, a0, a1, a2, r))
        return;
    if (multios_in_call())
        multios_renew_due = 1;
    else
        multios_renew_delegate();
}

/* ---- configuration (the block of crates/preload-abi, mapped from MULTIOS_EMU_CONFIG) ---- */

_Static_assert(sizeof(cpu_set_t) == sizeof(((struct multios_preload_config *)0)->compute),
               "a configuration CPU mask is a cpu_set_t");
_Static_assert(sizeof stats_dir == MULTIOS_PRELOAD_PATH_MAX, "the statistics directory fits");

static char *put_str(char *p, const char *s) {
    size_t n = strlen(s);
    memcpy(p, s, n);
    return p + n;
}

/* Refuses the block at `file` (`what` is FOUND where this library expects EXPECTED): says why on
 * stderr and in FILE.rejected, which multios reads to name the mismatch, and ends the process
 * with MULTIOS_PRELOAD_REJECT_EXIT before the program runs. */
__attribute__((noreturn)) static void reject(const char *file, const char *what, uint64_t found, uint64_t expected) {
    char why[160], *w = why;
    w = put_str(w, what);
    *w++ = ' ';
    w = put_u64(w, found);
    w = put_str(w, ", this library expects ");
    w = put_u64(w, expected);
    char msg[sizeof why + 700], *p = msg;
    p = put_str(p, "multios preload: refusing the configuration block ");
    size_t fl = strnlen(file, 500);
    memcpy(p, file, fl);
    p += fl;
    p = put_str(p, ": ");
    memcpy(p, why, (size_t)(w - why));
    p += w - why;
    p = put_str(p, " (multios and its preload library come from different builds)\n");
    raw6(SYS_write, 2, (long)msg, p - msg, 0, 0, 0);
    char path[sizeof msg], *q = path;
    memcpy(q, file, fl);
    q = put_str(q + fl, MULTIOS_PRELOAD_REJECTED_SUFFIX);
    *q = 0;
    int fd = (int)raw6(SYS_openat, AT_FDCWD, (long)path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644, 0, 0);
    if (fd >= 0) {
        *w++ = '\n';
        raw6(SYS_write, fd, (long)why, w - why, 0, 0, 0);
        raw6(SYS_close, fd, 0, 0, 0, 0, 0);
    }
    for (;;)
        raw6(SYS_exit_group, MULTIOS_PRELOAD_REJECT_EXIT, 0, 0, 0, 0, 0);
}

/* Maps the block (kept mapped: the cost samples are read in place) and applies it; -1 when the
 * file cannot be read (the library then stays inactive), the process ends when the block is not
 * one this library understands. */
static int load_config(const char *file) {
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return -1;
    }
    uint64_t len = (uint64_t)st.st_size;
    if (len < 12) {
        close(fd);
        reject(file, "file size", len, sizeof(struct multios_preload_config));
    }
    const unsigned char *base = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (base == MAP_FAILED)
        return -1;
    const struct multios_preload_config *c = (const void *)base;
    if (c->magic != MULTIOS_PRELOAD_MAGIC)
        reject(file, "magic", c->magic, MULTIOS_PRELOAD_MAGIC);
    if (c->version != MULTIOS_PRELOAD_VERSION)
        reject(file, "version", c->version, MULTIOS_PRELOAD_VERSION);
    if (c->size != sizeof *c)
        reject(file, "header size", c->size, sizeof *c);
    if (len < sizeof *c)
        reject(file, "file size", len, sizeof *c);
    if (c->total > len || c->total < sizeof *c)
        reject(file, "block size", c->total, len);
    multios_mode = c->mode == MULTIOS_PRELOAD_MODE_SHM ? MODE_SHM : MODE_MIGRATE;
    want_eager = c->intercept == MULTIOS_PRELOAD_INTERCEPT_EAGER;
    rewrite = c->rewrite != 0;
    realtime = c->realtime != 0;
    multios_timing = c->timing != 0;
    multios_patience_ticks = c->patience_ticks;
    idle_ticks = c->idle_ticks;
    hv_exit_ticks = c->hv_exit_ticks;
    memcpy(&multios_compute_set, c->compute, sizeof c->compute);
    memcpy(&multios_control_set, c->control, sizeof c->control);
    for (int i = 0; i < MULTIOS_PRELOAD_CPU_WORDS; i++)
        shares_cpu |= (c->compute[i] & c->control[i]) != 0;
    memcpy(stats_dir, c->stats_dir, sizeof stats_dir);
    stats_dir[sizeof stats_dir - 1] = 0;
    memcpy(multios_rw_cache, c->rewrite_cache, sizeof multios_rw_cache);
    multios_rw_cache[sizeof multios_rw_cache - 1] = 0;
    for (int nr = 0; nr < NR_MAX; nr++) {
        stub_local[nr] = c->local_stub[nr] != 0;
        if (!c->delegated[nr])
            continue;
        const struct multios_preload_cost *k = &c->costs[nr];
        if (nr == SYS_exit_group)
            exit_group_delegated = 1;
        any_delegated = 1;
        multios_kind[nr] = R_DELEGATED;
        multios_costs[nr].kind = (int)k->kind;
        multios_costs[nr].param = k->param;
        if (k->kind == K_SAMPLES) {
            if (k->samples % 8 || k->samples < sizeof *c || k->samples > c->total ||
                k->nsamples > (c->total - k->samples) / 8)
                reject(file, "end of the cost samples of a delegated call", k->samples + 8 * k->nsamples, c->total);
            multios_costs[nr].samples = (const uint64_t *)(base + k->samples);
            multios_costs[nr].nsamples = k->nsamples;
        }
    }
    return 0;
}

/* ---- following threads and forks ---- */

struct start {
    void *(*fn)(void *);
    void *arg;
};

/* The start records live in a static pool, not on the heap: a record malloc'ed by the creator and
 * freed by the new thread made glibc give every new thread a tcache and an arena of its own (an
 * mmap of 64 MiB and munmaps to align it) that the program's thread, making no allocation,
 * natively never has. The profile and the emulator counted those calls as the program's: 13
 * munmaps where 8 threads natively make 5 (issue #3, found 2026-11-28). The heap is the fallback
 * when more threads than the pool holds are starting at once. */
#define START_SLOTS 512
static struct start start_pool[START_SLOTS];
static unsigned char start_used[START_SLOTS];

static struct start *start_get(void) {
    for (int i = 0; i < START_SLOTS; i++)
        if (!__atomic_exchange_n(&start_used[i], 1, __ATOMIC_ACQUIRE))
            return &start_pool[i];
    return malloc(sizeof(struct start));
}

static void start_put(struct start *s) {
    if (s >= start_pool && s < start_pool + START_SLOTS)
        __atomic_store_n(&start_used[s - start_pool], 0, __ATOMIC_RELEASE);
    else
        free(s);
}

static void *thread_start(void *p) {
    struct start s = *(struct start *)p;
    start_put(p);
    if (active) {
        start_delegate();
        if (sud_on)
            enable_sud();
    }
    return s.fn(s.arg);
}

int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
    if (!real_pthread_create)
        real_pthread_create = dlsym(RTLD_NEXT, "pthread_create");
    struct start *s = start_get();
    if (!s)
        return EAGAIN;
    s->fn = fn;
    s->arg = arg;
    int r = real_pthread_create(t, attr, thread_start, s);
    if (r)
        start_put(s);
    return r;
}

static void after_fork_child(void) {
    for (int i = 0; i < MAX_DELEGATES; i++)
        delegate_tids[i] = 0; /* the parent's; this process makes its own */
    multios_own_cpu_forked();
    for (int i = 0; i < NR_MAX; i++)
        multios_del_cnt[i] = multios_loc_cnt[i] = multios_loc_ticks[i] = 0;
    multios_nsamp = 0;
    multios_nodelegate = 0;
    multios_move_out_failed = multios_move_back_failed = 0;
    dump_seq = 0;
    mark_started();
    multios_fork_gen++;
    if (active) {
        start_delegate();
        if (sud_on)
            enable_sud();
    }
}

/* Maps the page at address 0 that rewritten sites call into (`call *%rax` lands at address nr).
 * zpoline fills [0, 512) with 1-byte NOPs; here it is "eb 40" repeated: from an even address that is
 * `jmp +0x40`, from an odd one the same jump behind a REX prefix (0x40, ignored by jmp), so any entry
 * reaches 512 in at most eight jumps instead of up to 512 NOPs. Every landing point is even (x + 66,
 * y + 67), at most 578: [512, 596) holds `eb d` at even addresses, one jump to 596 (entry 511 reads
 * it behind its REX byte), where `movabs $multios_tramp, %r11; jmp *%r11` follows. The REX byte
 * must be 0x40: entering at 511 executes it with the sled's first 0x90, and a REX.B prefix (as 0x4f
 * was) turns that NOP into `xchg %r8, %rax` (getuid, nr 102, landed there and ran nr = r8).
 * Needs CAP_SYS_RAWIO (root) or vm.mmap_min_addr = 0. */
#define SLED_END 596
static int map_trampoline(void) {
    unsigned char *z = (unsigned char *)raw6(SYS_mmap, 0, 4096, PROT_READ | PROT_WRITE,
                                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if ((long)z != 0)
        return 0;
    __asm__("" : "+r"(z)); /* address 0 is a valid page here; keep the compiler from assuming otherwise */
    volatile unsigned char *v = z;
    for (int i = 0; i < 4096; i++)
        v[i] = i < 512 ? (i % 2 ? 0x40 : 0xeb) : i < SLED_END ? (i % 2 ? (unsigned char)(SLED_END - (i + 1)) : 0xeb) : 0xcc;
    uint64_t target = (uint64_t)multios_tramp;
    v[SLED_END] = 0x49; /* movabs $target, %r11 */
    v[SLED_END + 1] = 0xbb;
    for (int i = 0; i < 8; i++)
        v[SLED_END + 2 + i] = (unsigned char)(target >> (8 * i));
    v[SLED_END + 10] = 0x41; /* jmp *%r11 */
    v[SLED_END + 11] = 0xff;
    v[SLED_END + 12] = 0xe3;
    /* Execute-only: a program's NULL-pointer read must still fault, as it does natively (a JVM's
     * implicit null checks and Go's nil checks count on it; a readable page 0 handed HotSpot the
     * sled's bytes, 0x40eb40eb, as an object's class, and it crashed). Without read access in the
     * protection, x86 Linux gives the page its execute-only protection key (PKU: reads and writes
     * fault with SEGV_PKUERR, instruction fetches go through); without PKU the page stays readable,
     * which zero_page_readable() reports. */
    return raw6(SYS_mprotect, 0, 4096, PROT_EXEC, 0, 0, 0) == 0;
}

/* Whether the trampoline's page can be read (no execute-only protection key on this machine): the
 * kernel copies a path from address 1, which reaches the NUL at SLED_END - 1 if the page is
 * readable (ENOENT) and faults at once if it is not (EFAULT). */
static int zero_page_readable(void) {
    return raw6(SYS_access, 1, F_OK, 0, 0, 0, 0) != -EFAULT;
}

/* The trampoline's slow path (SUD off), with the program's registers and extended state saved:
 * calls that need ordinary C around them. */
HIDDEN long multios_slow(long nr, long a0, long a1, long a2, long a3, long a4, long a5) {
    if (nr == SYS_execve || nr == SYS_execveat) {
        multios_loc_cnt[nr]++;
        multios_note_exec(nr, a0, nr == SYS_execve ? a2 : a3);
        kick_before_exec();
        dump_stats(); /* the counts so far; the new image starts its own */
        return raw6(nr, a0, a1, a2, a3, a4, a5);
    }
    if (nr == SYS_exit_group)
        exit_group_now(a0);
    if (nr == SYS_exit) {
        /* shm: the thread's delegate ends with it (before_local). Counted first: it never returns. */
        __atomic_fetch_add(&multios_loc_cnt[nr], 1, __ATOMIC_RELAXED);
        before_local(nr);
        for (;;)
            raw6(SYS_exit, a0, 0, 0, 0, 0, 0);
    }
    if ((multios_kind[nr] & 0x3f) == R_SLOW && nr != SYS_rt_sigaction) {
        /* A call that may change the credentials, namespaces or file table (shm with a delegate):
         * made here, counted and timed as a local call, then the delegate follows. */
        before_local(nr);
        uint64_t t0 = __rdtsc();
        long r = raw6(nr, a0, a1, a2, a3, a4, a5);
        __atomic_fetch_add(&multios_loc_ticks[nr], __rdtsc() - t0, __ATOMIC_RELAXED);
        __atomic_fetch_add(&multios_loc_cnt[nr], 1, __ATOMIC_RELAXED);
        after_local(nr, a0, a1, a2, r);
        return r;
    }
    if (nr == SYS_rt_sigaction) {
        /* Counted and timed as the fast path times a local call (`profile --backend inproc`). */
        uint64_t t0 = __rdtsc();
        long r = sigaction_call(a0, (const struct ksigaction *)a1, (struct ksigaction *)a2, a3);
        __atomic_fetch_add(&multios_loc_ticks[nr], __rdtsc() - t0, __ATOMIC_RELAXED);
        __atomic_fetch_add(&multios_loc_cnt[nr], 1, __ATOMIC_RELAXED);
        return r;
    }
    /* mmap, mprotect, pkey_mprotect with PROT_EXEC: new code to rewrite once the call succeeded. */
    long r;
    if ((multios_kind[nr] & 0x3f) == R_DELEGATED) {
        r = multios_delegate(nr, a0, a1, a2, a3, a4, a5);
    } else {
        __atomic_fetch_add(&multios_loc_cnt[nr], 1, __ATOMIC_RELAXED);
        r = raw6(nr, a0, a1, a2, a3, a4, a5);
    }
    uint64_t lo = nr == SYS_mmap ? (uint64_t)r : (uint64_t)a0;
    if ((nr == SYS_mmap && (unsigned long)r < -4095UL) || (nr != SYS_mmap && r == 0)) {
        while (__atomic_exchange_n(&rewrite_lock, 1, __ATOMIC_ACQUIRE))
            _mm_pause();
        multios_rewrite_range(lo, lo + (uint64_t)a1, nr == SYS_mmap, &rw_late);
        __atomic_store_n(&rewrite_lock, 0, __ATOMIC_RELEASE);
    }
    return r;
}

/* Eager mode needs xsave (the slow path saves the extended state with it); sets its area size. */
static int xsave_ready(void) {
    unsigned a, b, c, d;
    __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1), "c"(0));
    if (!(c & (1u << 27))) /* OSXSAVE */
        return 0;
    __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0xd), "c"(0));
    multios_xsave_size = ((uint64_t)b + 63) / 64 * 64 + 64;
    return b >= 576;
}

__attribute__((constructor)) static void multios_preload_init(void) {
    const char *cfg = getenv("MULTIOS_EMU_CONFIG");
    real_pthread_create = dlsym(RTLD_NEXT, "pthread_create");
    if (!cfg || !real_pthread_create || load_config(cfg) != 0)
        return;
    mark_started();
    Dl_info self;
    if (dladdr((void *)multios_preload_init, &self) && self.dli_fname) {
        size_t n = strnlen(self.dli_fname, sizeof multios_library_path - 1);
        memcpy(multios_library_path, self.dli_fname, n);
        multios_library_path[n] = 0;
    }
    for (int i = 0; i < 4096; i++)
        multios_expq[i] = (uint32_t)(neg_ln((i + 0.5) / 4096.0) * 65536.0 + 0.5);
    if (rewrite) {
        rewrite_ok = map_trampoline();
        /* No execute-only page here (no PKU): a NULL read would return the sled's bytes instead of
         * faulting. Correct results first: no trampoline, every call through SUD (as --no-rewrite). */
        if (rewrite_ok && zero_page_readable()) {
            raw6(SYS_munmap, 0, 4096, 0, 0, 0, 0);
            rewrite_ok = 0;
        }
    }
    if (want_eager && rewrite_ok && xsave_ready()) {
        /* Eager: rewrite every site now; SUD stays off unless some 0f 05 pair could not be
         * classified (then the lazy machinery below serves those sites, with SUD on). */
        eager = 1;
        multios_rewrite_range(0, ~0ULL, 1, &rw_start);
        sud_on = rw_start.unsure != 0;
    }
    /* The calls the SIGSYS handler serves when SUD is on; with SUD off (or in a thread without
     * it) they take these routes through the trampoline. Signal masks and handlers need nothing
     * special without SUD (no SIGSYS to keep unblocked). */
    multios_kind[SYS_rt_sigreturn] = R_SIGRETURN;
    multios_kind[SYS_clone] = multios_kind[SYS_clone3] = multios_kind[SYS_fork] = multios_kind[SYS_vfork] = R_CLONE;
    multios_kind[SYS_execve] = multios_kind[SYS_execveat] = multios_kind[SYS_exit_group] = R_SLOW;
    /* These routes run their `syscall` inside the exempt range, so they serve a rewritten site
     * whether SUD is on or not. With SUD on, the signal-state calls still need the SIGSYS handler
     * (SIGSYS must stay unblocked, the mask is the one sigreturn restores). */
    if (sud_on) {
        multios_kind[SYS_rt_sigprocmask] |= R_VIA_SIGSYS;
        multios_kind[SYS_rt_sigaction] |= R_VIA_SIGSYS;
        multios_kind[SYS_rt_sigsuspend] |= R_VIA_SIGSYS;
        multios_kind[SYS_sigaltstack] |= R_VIA_SIGSYS;
        /* SA_ONSTACK: on the thread's alternate stack (altstack.c), never below the program's
         * stack pointer, where Go leaves a goroutine ≈ 800 bytes (issue #4). */
        multios_altstack_on = 1;
        if (install(SIGSYS, on_sigsys, SA_NODEFER | SA_ONSTACK) != 0) {
            multios_altstack_on = 0;
            return;
        }
    }
    /* shm with delegates: the kick signal's handler (before any delegate exists). */
    if (multios_mode == MODE_SHM && any_delegated) {
        raw6(SYS_rt_sigaction, MULTIOS_KICK_SIG, 0, (long)&prog_kick, 8, 0, 0); /* SIG_IGN is inherited */
        kick_on = install_kick() == 0;
    }
    /* shm with delegates: the calls that may change the credentials take the slow path, which
     * renews the delegate after them (they are local: SHM_ONLY_LOCAL). */
    if (multios_mode == MODE_SHM && any_delegated)
        for (unsigned i = 0; i < sizeof cred_calls / sizeof cred_calls[0]; i++)
            if (multios_kind[cred_calls[i]] == R_LOCAL)
                multios_kind[cred_calls[i]] = R_SLOW;
    /* shm with delegates: the process's CPU time less its delegates' (owncpu.c), also when these
     * calls are local: the slow path, whose after_local corrects the result. */
    if (multios_mode == MODE_SHM && any_delegated)
        for (unsigned i = 0; i < sizeof own_cpu_calls / sizeof own_cpu_calls[0]; i++)
            if (multios_kind[own_cpu_calls[i]] == R_LOCAL)
                multios_kind[own_cpu_calls[i]] = R_SLOW;
    /* shm with delegates: a thread's exit ends its delegate too (the slow path; before_local). */
    if (multios_mode == MODE_SHM && any_delegated && multios_kind[SYS_exit] == R_LOCAL)
        multios_kind[SYS_exit] = R_SLOW;
    if (eager) {
        /* A SIGSEGV handler goes behind wrap_handler (threads with SUD on: through on_sigsys). */
        multios_kind[SYS_rt_sigaction] = (multios_kind[SYS_rt_sigaction] & R_VIA_SIGSYS) | R_SLOW;
        multios_kind[SYS_mmap] |= R_EXECCHK;
        multios_kind[SYS_mprotect] |= R_EXECCHK;
        multios_kind[SYS_pkey_mprotect] |= R_EXECCHK;
    }
    if (getenv("MULTIOS_EMU_DEBUG")) {
        char b[200], *p = b;
        memcpy(p, "multios preload: eager ", 23); p += 23; p = put_u64(p, (uint64_t)eager);
        memcpy(p, " rewrite_ok ", 12); p += 12; p = put_u64(p, (uint64_t)rewrite_ok);
        memcpy(p, " sud_on ", 8); p += 8; p = put_u64(p, (uint64_t)sud_on);
        memcpy(p, " rewritten ", 11); p += 11; p = put_u64(p, rw_start.rewritten);
        memcpy(p, " unsure ", 8); p += 8; p = put_u64(p, rw_start.unsure);
        memcpy(p, " cached ", 8); p += 8; p = put_u64(p, rw_start.cached);
        memcpy(p, " stored ", 8); p += 8; p = put_u64(p, rw_start.stored);
        *p++ = '\n';
        raw6(SYS_write, 2, (long)b, p - b, 0, 0, 0);
    }
    pthread_atfork(NULL, NULL, after_fork_child);
    active = 1;
    start_delegate();
    if (sud_on)
        enable_sud();
}
