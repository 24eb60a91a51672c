/* The fast path of the multios preload library (see preload.c): the SUD-exempt code range, the
 * zpoline-style trampoline and the delegation of one call (shm mailbox or migrate). Compiled with
 * -mgeneral-regs-only: it runs in place of a program's `syscall` instruction, so it must not touch
 * vector registers, and it calls no libc function (libc may use them). */
#include "preload.h"
#include <linux/futex.h>
#include <sys/syscall.h>
#include <x86intrin.h>

HIDDEN uint64_t multios_slots[NSTUBS];

/* The SUD-exempt range [multios_exempt_begin, multios_exempt_end): every `syscall` in it goes to
 * the kernel even while the thread's SUD selector blocks.
 * - multios_restorer: the sa_restorer of our SIGSYS handler;
 * - multios_sigreturn_syscall: where a program's own rt_sigreturn is finished (preload.c);
 * - multios_stubs: 64 "local stubs" `syscall; jmp *slot`, one per call site of a call that must run
 *   in the program's own context (clone, fork, vfork, execve, sigaltstack, sigsuspend): the handler
 *   resumes the program at the stub, the call runs there and jumps back to the site;
 * - multios_xsys: a raw system call for this library's own use;
 * - multios_tramp: where rewritten call sites land (via the page at address 0). */
__asm__(".text\n"
        ".globl multios_exempt_begin\n.hidden multios_exempt_begin\n"
        "multios_exempt_begin:\n"
        ".globl multios_restorer\n.hidden multios_restorer\n"
        "multios_restorer:\n"
        "  movq $15, %rax\n"
        ".globl multios_sigreturn_syscall\n.hidden multios_sigreturn_syscall\n"
        "multios_sigreturn_syscall:\n"
        "  syscall\n"
        "  hlt\n"
        ".globl multios_xsys\n.hidden multios_xsys\n"
        "multios_xsys:\n"
        "  movq %rdi, %rax\n"
        "  movq %rsi, %rdi\n"
        "  movq %rdx, %rsi\n"
        "  movq %rcx, %rdx\n"
        "  movq %r8, %r10\n"
        "  movq %r9, %r8\n"
        "  movq 8(%rsp), %r9\n"
        "  syscall\n"
        "  ret\n"
        /* Trampoline. Entry: rax = nr, args in rdi rsi rdx r10 r8 r9, [rsp] = return address. */
        ".globl multios_tramp\n.hidden multios_tramp\n"
        "multios_tramp:\n"
        "  leaq -128(%rsp), %rsp\n"          /* keep clear of the rest of the caller's red zone */
        "  cmpq $512, %rax\n"
        "  jae 3f\n"
        "  leaq multios_kind(%rip), %r11\n"
        "  movzbl (%r11,%rax), %r11d\n"
        "  testl %r11d, %r11d\n"
        "  jnz 2f\n"
        "  leaq multios_loc_cnt(%rip), %r11\n"
        "  lock incq (%r11,%rax,8)\n"
        "3:\n"
        "  syscall\n"
        "  leaq 128(%rsp), %rsp\n"
        "  ret\n"
        "2:\n"
        "  cmpl $2, %r11d\n"
        "  je 4f\n"
        "  pushq %rbx\n"
        "  pushq %rdi\n"
        "  pushq %rsi\n"
        "  pushq %rdx\n"
        "  pushq %r10\n"
        "  pushq %r8\n"
        "  pushq %r9\n"
        "  movq %rsp, %rbx\n"
        "  andq $-16, %rsp\n"
        "  subq $16, %rsp\n"
        "  movq 0(%rbx), %r11\n"             /* a5 = r9 -> 7th C argument on the stack */
        "  movq %r11, 0(%rsp)\n"
        "  movq %r8, %r9\n"                  /* a4 */
        "  movq %r10, %r8\n"                 /* a3 */
        "  movq %rdx, %rcx\n"                /* a2 */
        "  movq %rsi, %rdx\n"                /* a1 */
        "  movq %rdi, %rsi\n"                /* a0 */
        "  movq %rax, %rdi\n"                /* nr */
        "  call multios_delegate\n"
        "  movq %rbx, %rsp\n"
        "  popq %r9\n"
        "  popq %r8\n"
        "  popq %r10\n"
        "  popq %rdx\n"
        "  popq %rsi\n"
        "  popq %rdi\n"
        "  popq %rbx\n"
        "  leaq 128(%rsp), %rsp\n"
        "  ret\n"
        "4:\n"                               /* SIGSYS path: return address travels in r11 */
        "  leaq 128(%rsp), %rsp\n"
        "  popq %r11\n"
        "  jmp multios_fallback\n"
        ".balign 16\n"
        ".globl multios_stubs\n.hidden multios_stubs\n"
        "multios_stubs:\n"
        ".irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63\n"
        "  .balign 16\n"
        "  syscall\n"
        "  jmp *multios_slots+8*\\i(%rip)\n"
        ".endr\n"
        ".globl multios_exempt_end\n.hidden multios_exempt_end\n"
        "multios_exempt_end:\n"
        "  nop\n"
        /* Outside the exempt range: traps to the SIGSYS handler, which finds the site in r11. */
        ".globl multios_fallback\n.hidden multios_fallback\n"
        "multios_fallback:\n"
        "  syscall\n"
        ".globl multios_fallback_end\n.hidden multios_fallback_end\n"
        "multios_fallback_end:\n"
        "  hlt\n");

static __thread uint64_t rng_state __attribute__((tls_model("initial-exec")));

static uint64_t rng_next(void) {
    uint64_t x = rng_state ? rng_state : (__rdtsc() | 1);
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

HIDDEN uint64_t multios_draw(long nr) {
    struct cost *c = &multios_costs[nr];
    switch (c->kind) {
    case K_EXP: /* 4096 quantiles of the unit exponential, 16.16 fixed point */
        return (c->param * (uint64_t)multios_expq[rng_next() & 4095]) >> 16;
    case K_SAMPLES:
        return c->nsamples ? c->samples[rng_next() % c->nsamples] : 0;
    default:
        return c->param;
    }
}

HIDDEN uint64_t multios_spin(uint64_t ticks) {
    if (!ticks)
        return 0;
    uint64_t s = __rdtsc(), t;
    do {
        t = __rdtsc();
    } while (t - s < ticks);
    return t - s;
}

HIDDEN void multios_record(uint64_t t) {
    if (!t)
        return; /* f_c = 0: nothing was delivered */
    uint64_t i = __atomic_fetch_add(&multios_nsamp, 1, __ATOMIC_RELAXED);
    if (i < MAX_SAMPLES)
        multios_samples[i] = t;
}

/* Serves one delegated call from the program's thread. */
HIDDEN long multios_delegate(long nr, long a0, long a1, long a2, long a3, long a4, long a5) {
    __atomic_fetch_add(&multios_del_cnt[nr], 1, __ATOMIC_RELAXED);
    if (multios_mode == MODE_MIGRATE) {
        multios_xsys(SYS_sched_setaffinity, 0, sizeof multios_control_set, (long)&multios_control_set, 0, 0, 0);
        multios_record(multios_spin(multios_draw(nr)));
        long r = multios_xsys(nr, a0, a1, a2, a3, a4, a5);
        multios_record(multios_spin(multios_draw(nr)));
        multios_xsys(SYS_sched_setaffinity, 0, sizeof multios_compute_set, (long)&multios_compute_set, 0, 0, 0);
        return r;
    }
    struct mbox *m = multios_my_mbox;
    if (!m || multios_my_gen != multios_fork_gen) {
        /* A thread without a delegate (made by a raw clone): the call runs here, uncharged. */
        __atomic_fetch_add(&multios_nodelegate, 1, __ATOMIC_RELAXED);
        return multios_xsys(nr, a0, a1, a2, a3, a4, a5);
    }
    m->nr = nr;
    m->a[0] = a0;
    m->a[1] = a1;
    m->a[2] = a2;
    m->a[3] = a3;
    m->a[4] = a4;
    m->a[5] = a5;
    __atomic_store_n(&m->state, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&m->sleeping, __ATOMIC_SEQ_CST))
        multios_xsys(SYS_futex, (long)&m->state, FUTEX_WAKE, 1, 0, 0, 0);
    /* Spin for the reply (no PAUSE: on Zen it costs tens of cycles, i.e. latency); after
     * multios_patience_ticks (a long blocking call), poll every 50 µs so the CPU is not held. */
    uint64_t t0 = __rdtsc(), polls = 0;
    while (__atomic_load_n(&m->state, __ATOMIC_ACQUIRE) != 2) {
        if ((++polls & 1023) == 0 && __rdtsc() - t0 > multios_patience_ticks) {
            struct { long s, ns; } ts = {0, 50000};
            multios_xsys(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
        }
    }
    long r = m->nr;
    __atomic_store_n(&m->state, 0, __ATOMIC_RELEASE);
    return r;
}
