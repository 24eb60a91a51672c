/* Shared between preload.c (set-up, SIGSYS handler: ordinary C) and fast.c (the trampoline path,
 * compiled with -mgeneral-regs-only because it runs between a program's `syscall` site and the
 * kernel, where the program may keep live values in vector registers). */
#ifndef MULTIOS_PRELOAD_H
#define MULTIOS_PRELOAD_H
#define _GNU_SOURCE
#include "multios_preload_abi.h" /* crates/preload-abi: the configuration block */
#include <sched.h>
#include <stdint.h>

#define NR_MAX MULTIOS_PRELOAD_NR_MAX
#define MAX_SAMPLES (1u << 20)
#define HIDDEN __attribute__((visibility("hidden")))

enum mode { MODE_MIGRATE = 0, MODE_SHM = 1 };
enum kind {
    K_CONST = MULTIOS_PRELOAD_COST_CONSTANT,
    K_EXP = MULTIOS_PRELOAD_COST_EXPONENTIAL,
    K_SAMPLES = MULTIOS_PRELOAD_COST_SAMPLES,
};
/* multios_kind[nr]: how the trampoline routes a call. 0 local (fast path), 1 delegated, 2 handled by
 * the SIGSYS path (SUD on); with SUD off: 3 rt_sigreturn (run at the signal frame), 4 clone, clone3,
 * fork, vfork (the child must not return through the parent's stack), 5 the slow path (full register
 * state saved, then multios_slow in ordinary C: execve, execveat, exit_group); R_EXECCHK added to
 * 0 or 1 (mmap, mprotect, pkey_mprotect): the slow path when the protection has PROT_EXEC. */
enum route {
    R_LOCAL = 0,
    R_DELEGATED = 1,
    R_SIGSYS = 2,
    R_SIGRETURN = 3,
    R_CLONE = 4,
    R_SLOW = 5,
    /* SUD on (lazy, or eager with unsure bytes): added to the signal-state calls (rt_sigprocmask,
     * rt_sigaction, rt_sigsuspend, sigaltstack). A thread that turned SUD on (multios_sud_thread)
     * takes the SIGSYS path; one that has not — a new thread before the pthread_create wrapper
     * enables it, a thread made by a raw clone — runs the call directly. */
    R_VIA_SIGSYS = 0x40,
    R_EXECCHK = 0x80,
};

/* What the eager rewriter (rewrite.c) did. */
struct rw_stats {
    uint64_t rewritten; /* `syscall` instructions rewritten into `call *%rax` */
    uint64_t unsure;    /* 0f 05 pairs that could not be classified safely, left alone */
    uint64_t cached;    /* file mappings patched from the rewrite cache (no scan, no decoding) */
    uint64_t stored;    /* file mappings classified and stored in the rewrite cache */
    uint64_t redzone;   /* `syscall` instructions left alone because their function uses the red zone */
};

struct cost {
    int kind;
    uint64_t param; /* ticks (const) or mean ticks (exp) */
    const uint64_t *samples; /* in the mapped configuration block */
    uint64_t nsamples;
};

/* One app thread's mailbox to its delegate thread (shm). */
struct mbox {
    _Alignas(64) volatile uint32_t state; /* 0 idle, 1 request posted, 2 reply ready */
    volatile uint32_t sleeping;
    long nr; /* the request's number; the reply's result */
    long a[6];
    /* Second cache line (the request and the reply share the first; nothing else does): */
    volatile uint64_t call_t0; /* TSC when the delegate entered the call, 0 outside it */
    volatile uint32_t waiting; /* the caller sleeps on `state` (a call that blocks) */
    volatile int32_t tid;      /* the delegate's tid; 0 once it has exited (CLONE_CHILD_CLEARTID) */
    volatile uint32_t kicks_seen; /* kicks (MULTIOS_KICK_SIG) the delegate's handler has taken */
    int32_t app_tid;              /* the thread it serves (its CPU-time clock is that thread's) */
    char pad[40];
    uint64_t rng; /* the delegate's random generator (exponential f_c) */
};

extern HIDDEN int multios_mode;
extern HIDDEN unsigned char multios_kind[NR_MAX];
extern HIDDEN struct cost multios_costs[NR_MAX];
extern HIDDEN uint32_t multios_expq[4096];
extern HIDDEN cpu_set_t multios_compute_set, multios_control_set;
extern HIDDEN volatile uint64_t multios_del_cnt[NR_MAX], multios_loc_cnt[NR_MAX], multios_nodelegate;
/* migrate: delegated calls whose move to the control CPUs, or back, sched_setaffinity refused. */
extern HIDDEN volatile uint64_t multios_move_out_failed, multios_move_back_failed;
/* Profiling (the configuration's `timing`): TSC ticks spent in each local call made through the trampoline. */
extern HIDDEN volatile uint64_t multios_loc_ticks[NR_MAX];
extern HIDDEN uint8_t multios_timing;
extern HIDDEN uint64_t multios_samples[MAX_SAMPLES];
extern HIDDEN volatile uint64_t multios_nsamp;
extern HIDDEN volatile uint64_t multios_fork_gen;
extern HIDDEN uint64_t multios_patience_ticks;
extern __thread struct mbox *multios_my_mbox __attribute__((tls_model("initial-exec")));
extern __thread uint64_t multios_my_gen __attribute__((tls_model("initial-exec")));
/* 1 once this thread turned Syscall User Dispatch on (copied into fork children, which keep it). */
extern __thread char multios_sud_thread __attribute__((tls_model("initial-exec")));
/* The trampoline's state around clone, clone3, fork and vfork (the asm in fast.c uses these offsets).
 * - depth, slot: a ring of return addresses for calls without a new stack (a vfork child shares
 *   the stack and overwrites it; the child jumps to its slot, the parent pops it);
 * - info: per slot, bit 0 the caller's `solo`, bit 1 "the child is a process" (not CLONE_THREAD);
 * - solo (offset 136): this task is a process whose memory may be shared with the process that
 *   owns the mailbox and delegate thread in its TLS — a vfork or posix_spawn child (CLONE_VM
 *   without CLONE_THREAD, sharing even the TLS with its suspended parent), or a fork child before
 *   its atfork handler gave it a delegate. Its delegated calls must not go to that delegate, which
 *   runs in the parent and would act on the parent's descriptor table, signal state and
 *   credentials: it makes them itself (shm), with the f_c spins delivered in place. The child
 *   sets it right after the clone; the parent restores its own value; a new delegate clears it. */
struct vf {
    uint64_t depth, slot[8], info[8], solo;
};
extern __thread struct vf multios_vf __attribute__((tls_model("initial-exec")));
_Static_assert(__builtin_offsetof(struct vf, info) == 72 && __builtin_offsetof(struct vf, solo) == 136,
               "offsets used by the trampoline (fast.c)");

/* rewrite.c */
/* fresh: the mappings in [lo, hi) hold their file's bytes as mapped (start-up, a new mmap), so
 * what is found there may be stored in the rewrite cache (not after an mprotect: the range may
 * hold sites rewritten before). */
HIDDEN void multios_rewrite_range(uint64_t lo, uint64_t hi, int fresh, struct rw_stats *st);
/* True when the `syscall` at `site` must stay a `syscall` (its function keeps data in the red zone,
 * which the `call` would overwrite): the lazy path (SIGSYS) leaves it to SUD. Async-signal-safe. */
HIDDEN int multios_never_rewrite(uint64_t site);
/* Before an execve (static_exec.c): counts targets that are statically linked (the library cannot
 * follow them) and keeps the first one's path for the report. */
HIDDEN void multios_note_exec(long nr, long path, long envp);
/* ... and execve calls whose environment no longer preloads this library (its path, from dladdr). */
extern HIDDEN uint64_t multios_bare_execs;
extern HIDDEN char multios_bare_exec_path[256];
extern HIDDEN char multios_library_path[512];
extern HIDDEN uint64_t multios_static_execs;
extern HIDDEN char multios_static_exec_path[256];
/* The rewrite cache's directory (the configuration's rewrite_cache; empty: none). */
extern HIDDEN char multios_rw_cache[MULTIOS_PRELOAD_PATH_MAX];
/* owncpu.c: the process CPU clock, getrusage(RUSAGE_SELF) and times() less the delegates' CPU
 * time (shm). add: a delegate started; retire: on a delegate about to exit; forked: in a fork
 * child; fix: corrects call nr's result r (arguments a0, a1) in place. */
HIDDEN void multios_own_cpu_add(int32_t tid);
HIDDEN void multios_own_cpu_retire(void);
HIDDEN void multios_own_cpu_forked(void);
HIDDEN void multios_own_cpu_fix(long nr, long a0, long a1, long r);
/* preload.c: the trampoline's slow path */
HIDDEN long multios_slow(long nr, long a0, long a1, long a2, long a3, long a4, long a5);
extern HIDDEN uint64_t multios_xsave_size;

/* altstack.c: the library's alternate signal stacks (issue #4). on: SUD threads get one (the
 * constructor sets it); thread: gives the calling thread its stack (before SUD is turned on);
 * mine: whether it has one; entry: where the SIGSYS handler resumes the program's sigaltstack
 * call (rcx = the site's return address); leave: before a program handler runs, makes its frame
 * what Linux would have made when the program has no stack of its own (the stack setting its
 * rt_sigreturn restores; with SA_ONSTACK, the frame moved to the interrupted stack: no return). */
extern HIDDEN int multios_altstack_on;
HIDDEN void multios_altstack_thread(void);
HIDDEN int multios_altstack_mine(void);
extern HIDDEN char multios_altstack_entry[];
HIDDEN void multios_altstack_leave(int sig, void *si, void *uc, void *handler, int onstack);

/* fast.c */
HIDDEN long multios_xsys(long nr, long a, long b, long c, long d, long e, long f);
HIDDEN long multios_delegate(long nr, long a0, long a1, long a2, long a3, long a4, long a5);
HIDDEN uint64_t multios_draw(long nr, uint64_t *rng);
HIDDEN long multios_spawn(void *stack_top, void (*fn)(void *), void *arg, volatile int32_t *ctid);
/* The signal that interrupts a delegate's blocking call when a handler of the program ran during
 * it (SIGRTMAX: its handler is the library's, the program's own action for it is kept apart). */
#define MULTIOS_KICK_SIG 64
/* fast.c: the signal whose handler last ran on this thread, and a count of such runs (preload.c). */
extern __thread int multios_last_sig __attribute__((tls_model("initial-exec")));
extern __thread uint64_t multios_sig_seq __attribute__((tls_model("initial-exec")));
/* preload.c: a thread whose credentials changed gets a new delegate made with them (shm). Set
 * when a signal handler changed them during this thread's own delegated call: the renewal waits
 * for the reply (fast.c), and calls run in place until then. */
extern __thread int multios_renew_due __attribute__((tls_model("initial-exec")));
HIDDEN void multios_renew_delegate(void);
/* fast.c: whether this thread is inside its own delegated call (a signal handler interrupted it). */
HIDDEN int multios_in_call(void);
HIDDEN uint64_t multios_spin(uint64_t ticks);
HIDDEN void multios_record(uint64_t t);
extern HIDDEN char multios_exempt_begin[], multios_exempt_end[], multios_restorer[], multios_sigreturn_syscall[],
    multios_stubs[], multios_tramp[], multios_fallback[], multios_fallback_end[];
extern HIDDEN uint64_t multios_slots[];
#define NSTUBS 64
#endif
