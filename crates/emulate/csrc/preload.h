/* Shared between preload.c (set-up, SIGSYS handler: ordinary C) and fast.c (the trampoline path,
 * compiled with -mgeneral-regs-only because it runs between a program's `syscall` site and the
 * kernel, where the program may keep live values in vector registers). */
#ifndef MULTIOS_PRELOAD_H
#define MULTIOS_PRELOAD_H
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>

#define NR_MAX 512
#define MAX_SAMPLES (1u << 20)
#define HIDDEN __attribute__((visibility("hidden")))

enum mode { MODE_MIGRATE = 0, MODE_SHM = 1 };
enum kind { K_CONST = 0, K_EXP = 1, K_SAMPLES = 2 };
/* multios_kind[nr]: 0 local (fast path), 1 delegated, 2 handled by the SIGSYS path. */
enum route { R_LOCAL = 0, R_DELEGATED = 1, R_SIGSYS = 2 };

struct cost {
    int kind;
    uint64_t param; /* ticks (const) or mean ticks (exp) */
    uint64_t *samples;
    uint64_t nsamples;
};

/* One app thread's mailbox to its delegate thread (shm). */
struct mbox {
    _Alignas(64) volatile uint32_t state; /* 0 idle, 1 request posted, 2 reply ready */
    volatile uint32_t sleeping;
    long nr; /* the request's number; the reply's result */
    long a[6];
    char pad[64]; /* the request and the reply share one cache line; nothing else does */
};

extern HIDDEN int multios_mode;
extern HIDDEN unsigned char multios_kind[NR_MAX];
extern HIDDEN struct cost multios_costs[NR_MAX];
extern HIDDEN uint32_t multios_expq[4096];
extern HIDDEN cpu_set_t multios_compute_set, multios_control_set;
extern HIDDEN volatile uint64_t multios_del_cnt[NR_MAX], multios_loc_cnt[NR_MAX], multios_nodelegate;
extern HIDDEN uint64_t multios_samples[MAX_SAMPLES];
extern HIDDEN volatile uint64_t multios_nsamp;
extern HIDDEN volatile uint64_t multios_fork_gen;
extern HIDDEN uint64_t multios_patience_ticks;
extern __thread struct mbox *multios_my_mbox __attribute__((tls_model("initial-exec")));
extern __thread uint64_t multios_my_gen __attribute__((tls_model("initial-exec")));

/* fast.c */
HIDDEN long multios_xsys(long nr, long a, long b, long c, long d, long e, long f);
HIDDEN long multios_delegate(long nr, long a0, long a1, long a2, long a3, long a4, long a5);
HIDDEN uint64_t multios_draw(long nr);
HIDDEN uint64_t multios_spin(uint64_t ticks);
HIDDEN void multios_record(uint64_t t);
extern HIDDEN char multios_exempt_begin[], multios_exempt_end[], multios_restorer[], multios_sigreturn_syscall[],
    multios_stubs[], multios_tramp[], multios_fallback[], multios_fallback_end[];
extern HIDDEN uint64_t multios_slots[];
#define NSTUBS 64
#endif
