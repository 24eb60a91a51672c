/* The fast path of the multios preload library (see preload.c): the SUD-exempt code range, the
 * zpoline-style trampoline and the delegation of one call (shm mailbox or migrate). Compiled with
 * -mgeneral-regs-only: it runs in place of a program's `syscall` instruction, so it must not touch
 * vector registers, and it calls no libc function (libc may use them). */
#include "preload.h"
#include <linux/futex.h>
#include <sys/syscall.h>
#include <x86intrin.h>

HIDDEN uint64_t multios_slots[NSTUBS];
HIDDEN uint64_t multios_xsave_size = 4096;
__thread char multios_sud_thread __attribute__((tls_model("initial-exec")));
/* The trampoline's per-thread state around clone/fork/vfork (see preload.h and the asm below). */
HIDDEN __thread struct vf multios_vf __attribute__((tls_model("initial-exec")));

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
        "1:\n"
        "  leaq multios_loc_cnt(%rip), %r11\n"
        "  lock incq (%r11,%rax,8)\n"
        "  cmpb $0, multios_timing(%rip)\n"   /* `multios profile --backend inproc` */
        "  jne 90f\n"
        "3:\n"
        "  syscall\n"
        /* Back to the site with an indirect jump, not `ret`: the kernel's return path (RSB filling,
         * SRSO "safe RET" here) leaves the return predictor empty, and a mispredicted `ret` cost
         * 15–65 ns per call (scripts/trampoline-cost.sh). rcx then holds the address after the site,
         * as after a real syscall. */
        "  movq 128(%rsp), %rcx\n"
        "  leaq 136(%rsp), %rsp\n"
        "  jmp *%rcx\n"
        /* Timed local call: TSC before and after the `syscall`, the difference added to
         * multios_loc_ticks[nr]. rdtsc writes edx:eax, so nr and rdx (an argument) wait on the stack:
         * [rsp] t0, [rsp+8] nr while the call runs. */
        "90:\n"
        "  pushq %rax\n"
        "  pushq %rdx\n"
        "  rdtsc\n"
        "  shlq $32, %rdx\n"
        "  orq %rdx, %rax\n"
        "  popq %rdx\n"
        "  pushq %rax\n"
        "  movq 8(%rsp), %rax\n"
        "  syscall\n"
        "  pushq %rax\n"                   /* [rsp] result, [rsp+8] t0, [rsp+16] nr */
        "  pushq %rdx\n"
        "  rdtsc\n"
        "  shlq $32, %rdx\n"
        "  orq %rdx, %rax\n"
        "  subq 16(%rsp), %rax\n"
        "  movq 24(%rsp), %rcx\n"
        "  leaq multios_loc_ticks(%rip), %r11\n"
        "  lock addq %rax, (%r11,%rcx,8)\n"
        "  popq %rdx\n"
        "  popq %rax\n"
        "  addq $16, %rsp\n"
        "  movq 128(%rsp), %rcx\n"
        "  leaq 136(%rsp), %rsp\n"
        "  jmp *%rcx\n"
        "2:\n"
        "  testl $0x40, %r11d\n"            /* R_VIA_SIGSYS: SUD on in this thread? */
        "  jz 21f\n"
        "  movq multios_sud_thread@gottpoff(%rip), %rcx\n"
        "  cmpb $0, %fs:(%rcx)\n"
        "  jne 4f\n"
        "  andl $0x3f, %r11d\n"
        "  jz 1b\n"
        "21:\n"
        "  cmpl $1, %r11d\n"
        "  je 5f\n"
        "  cmpl $2, %r11d\n"
        "  je 4f\n"
        "  cmpl $3, %r11d\n"
        "  je 6f\n"
        "  cmpl $4, %r11d\n"
        "  je 7f\n"
        "  cmpl $5, %r11d\n"
        "  je 8f\n"
        "  testb $4, %dl\n"                  /* R_EXECCHK: PROT_EXEC asked for? */
        "  jnz 8f\n"
        "  andl $0x7f, %r11d\n"
        "  jz 1b\n"
        "5:\n"
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
        "  movq 128(%rsp), %rcx\n"
        "  leaq 136(%rsp), %rsp\n"
        "  jmp *%rcx\n"
        /* rt_sigreturn: the restorer was entered by the handler's `ret` with rsp just above the
         * signal frame; `call` pushed 8 bytes more. Drop them (the call never returns). */
        "6:\n"
        "  leaq multios_loc_cnt(%rip), %r11\n"
        "  lock incq (%r11,%rax,8)\n"
        "  leaq 136(%rsp), %rsp\n"
        "  syscall\n"
        "  ud2\n"
        /* clone, clone3, fork, vfork. With a new stack (clone: rsi; clone3: stack + stack_size), the
         * return address is also written just below the child's stack top and the child starts 8
         * bytes lower: both parent and child then `ret` to the site. */
        "7:\n"
        "  leaq multios_loc_cnt(%rip), %r11\n"
        "  lock incq (%r11,%rax,8)\n"
        "  leaq 128(%rsp), %rsp\n"           /* [rsp] = return address */
        "  cmpl $435, %eax\n"
        "  je 71f\n"
        "  cmpl $56, %eax\n"
        "  jne 72f\n"
        "  testq %rsi, %rsi\n"
        "  jz 72f\n"
        "  movq (%rsp), %r11\n"
        "  movq %r11, -8(%rsi)\n"
        "  subq $8, %rsi\n"
        /* The parent keeps its own `solo` on its stack (the child, on its own stack, may
         * overwrite the TLS copy they share): [rsp] solo, [rsp+8] return address. */
        "  movq multios_vf@gottpoff(%rip), %r11\n"
        "  addq %fs:0, %r11\n"
        "  pushq 136(%r11)\n"
        "  syscall\n"
        "  addq $8, %rsi\n"
        "  testq %rax, %rax\n"
        "  jz 79f\n"
        "  movq multios_vf@gottpoff(%rip), %r11\n"
        "  addq %fs:0, %r11\n"
        "  popq 136(%r11)\n"                 /* the parent (or a failed call): solo as it was */
        "  popq %rcx\n"
        "  jmp *%rcx\n"
        "79:\n"                              /* the child, on its stack: [rsp] = return address */
        "  testl $0x10000, %edi\n"          /* CLONE_THREAD: a thread, not a process */
        "  jnz 80f\n"
        "  movq multios_vf@gottpoff(%rip), %r11\n"
        "  addq %fs:0, %r11\n"
        "  movq $1, 136(%r11)\n"             /* a new process: solo until exec or a delegate */
        "80:\n"
        "  popq %rcx\n"
        "  jmp *%rcx\n"
        "71:\n"                              /* clone3(args, size): stack at 40, stack_size at 48 */
        "  cmpq $64, %rsi\n"
        "  jb 72f\n"
        "  movq 40(%rdi), %r11\n"
        "  testq %r11, %r11\n"
        "  jz 72f\n"
        "  cmpq $8, 48(%rdi)\n"
        "  jb 72f\n"
        "  addq 48(%rdi), %r11\n"
        "  movq (%rsp), %rcx\n"
        "  movq %rcx, -8(%r11)\n"
        "  subq $8, 48(%rdi)\n"
        "  movq multios_vf@gottpoff(%rip), %r11\n"
        "  addq %fs:0, %r11\n"
        "  pushq 136(%r11)\n"                /* as for clone: [rsp] solo, [rsp+8] return address */
        "  syscall\n"
        "  testq %rax, %rax\n"
        "  jz 73f\n"
        "  addq $8, 48(%rdi)\n"              /* the parent restores the caller's struct */
        "  movq multios_vf@gottpoff(%rip), %r11\n"
        "  addq %fs:0, %r11\n"
        "  popq 136(%r11)\n"
        "  popq %rcx\n"
        "  jmp *%rcx\n"
        "73:\n"                              /* the child: flags (offset 0) in the struct it shares or copied */
        "  testl $0x10000, (%rdi)\n"
        "  jnz 80b\n"
        "  movq multios_vf@gottpoff(%rip), %r11\n"
        "  addq %fs:0, %r11\n"
        "  movq $1, 136(%r11)\n"
        "  popq %rcx\n"
        "  jmp *%rcx\n"
        /* No new stack (fork, vfork, clone/clone3 without a stack): a vfork child shares the stack
         * and overwrites it, so the return address waits in a per-thread ring (TLS: shared with a
         * vfork child, copied into a fork child); the child does not pop it, the parent does. The
         * ring survives a signal handler that forks in between. Next to each return address, `info`:
         * bit 0 the caller's `solo`, bit 1 "the child is a process" (not CLONE_THREAD); the child
         * sets `solo` from it, the parent restores its own. */
        "72:\n"
        "  movq multios_vf@gottpoff(%rip), %r11\n"
        "  addq %fs:0, %r11\n"
        "  movq (%r11), %rcx\n"
        "  incq %rcx\n"
        "  movq %rcx, (%r11)\n"
        "  andl $7, %ecx\n"
        "  popq 8(%r11,%rcx,8)\n"
        "  pushq 136(%r11)\n"                /* info = solo (where the return address was) */
        "  popq 72(%r11,%rcx,8)\n"
        "  cmpl $56, %eax\n"                 /* clone: flags in rdi */
        "  jne 76f\n"
        "  testl $0x10000, %edi\n"
        "  jnz 77f\n"
        "  jmp 78f\n"
        "76:\n"
        "  cmpl $435, %eax\n"                /* clone3: flags at offset 0 of the struct */
        "  jne 78f\n"
        "  cmpq $8, %rsi\n"
        "  jb 78f\n"
        "  testl $0x10000, (%rdi)\n"
        "  jnz 77f\n"
        "78:\n"
        "  orq $2, 72(%r11,%rcx,8)\n"        /* fork, vfork, clone(3) of a process */
        "77:\n"
        "  syscall\n"
        "  movq multios_vf@gottpoff(%rip), %r11\n"
        "  addq %fs:0, %r11\n"
        "  movq (%r11), %rcx\n"
        "  andl $7, %ecx\n"
        "  pushq 8(%r11,%rcx,8)\n"           /* the return address, where it was before the pop */
        "  testq %rax, %rax\n"
        "  jz 74f\n"
        "  decq (%r11)\n"                    /* the parent (or a failed call) */
        "  movq 72(%r11,%rcx,8), %rcx\n"
        "  andl $1, %ecx\n"
        "  movq %rcx, 136(%r11)\n"           /* solo as it was */
        "  popq %rcx\n"
        "  jmp *%rcx\n"
        "74:\n"                              /* the child */
        "  movq 72(%r11,%rcx,8), %rcx\n"
        "  testl $2, %ecx\n"
        "  jz 75f\n"
        "  movl $1, %ecx\n"                  /* a new process: solo */
        "75:\n"
        "  andl $1, %ecx\n"
        "  movq %rcx, 136(%r11)\n"
        "  popq %rcx\n"
        "  jmp *%rcx\n"
        /* Slow path: every register and the extended state (xsave) saved, then multios_slow. */
        "8:\n"
        "  pushq %rbp\n"
        "  movq %rsp, %rbp\n"
        "  pushq %rax\n"                     /* -8 */
        "  pushq %rdi\n"                     /* -16 */
        "  pushq %rsi\n"                     /* -24 */
        "  pushq %rdx\n"                     /* -32 */
        "  pushq %r10\n"                     /* -40 */
        "  pushq %r8\n"                      /* -48 */
        "  pushq %r9\n"                      /* -56 */
        "  pushq %rbx\n"                     /* -64 */
        "  subq multios_xsave_size(%rip), %rsp\n"
        "  andq $-64, %rsp\n"
        "  xorl %ecx, %ecx\n"                /* the xsave header must start zeroed */
        "  movq %rcx, 512(%rsp)\n"
        "  movq %rcx, 520(%rsp)\n"
        "  movq %rcx, 528(%rsp)\n"
        "  movq %rcx, 536(%rsp)\n"
        "  movq %rcx, 544(%rsp)\n"
        "  movq %rcx, 552(%rsp)\n"
        "  movq %rcx, 560(%rsp)\n"
        "  movq %rcx, 568(%rsp)\n"
        "  movl $-1, %eax\n"
        "  movl $-1, %edx\n"
        "  xsave64 (%rsp)\n"
        "  movq %rsp, %rbx\n"
        "  subq $16, %rsp\n"
        "  movq -56(%rbp), %r11\n"
        "  movq %r11, (%rsp)\n"              /* a5 */
        "  movq -48(%rbp), %r9\n"            /* a4 */
        "  movq -40(%rbp), %r8\n"            /* a3 */
        "  movq -32(%rbp), %rcx\n"           /* a2 */
        "  movq -24(%rbp), %rdx\n"           /* a1 */
        "  movq -16(%rbp), %rsi\n"           /* a0 */
        "  movq -8(%rbp), %rdi\n"            /* nr */
        "  call multios_slow\n"
        "  movq %rax, -8(%rbp)\n"
        "  movl $-1, %eax\n"
        "  movl $-1, %edx\n"
        "  xrstor64 (%rbx)\n"
        "  leaq -64(%rbp), %rsp\n"
        "  popq %rbx\n"
        "  popq %r9\n"
        "  popq %r8\n"
        "  popq %r10\n"
        "  popq %rdx\n"
        "  popq %rsi\n"
        "  popq %rdi\n"
        "  popq %rax\n"
        "  popq %rbp\n"
        "  movq 128(%rsp), %rcx\n"
        "  leaq 136(%rsp), %rsp\n"
        "  jmp *%rcx\n"
        /* SIGSYS path: the return address stays at [rsp], where the handler finds it (not in a
         * register: `syscall` itself overwrites rcx and r11 before SUD traps). */
        "4:\n"
        "  leaq 128(%rsp), %rsp\n"
        "  jmp multios_fallback\n"
        /* multios_spawn(stack top, fn, arg, ctid): a bare thread (no libc thread structure, the
         * creator's TLS pointer) running fn(arg) on the given stack; returns the new tid or -errno.
         * Used for shm delegate threads, so that creating them makes no call through a rewritten
         * site. A non-NULL ctid is cleared (and futex-woken) by the kernel when the thread is gone
         * (CLONE_CHILD_CLEARTID): its stack may then be unmapped. */
        ".globl multios_spawn\n.hidden multios_spawn\n"
        "multios_spawn:\n"
        "  movq %rdx, -8(%rdi)\n"
        "  movq %rsi, -16(%rdi)\n"
        "  leaq -16(%rdi), %rsi\n"
        "  movq %rcx, %r10\n"
        "  movl $0x50f00, %edi\n"           /* CLONE_VM|FS|FILES|SIGHAND|THREAD|SYSVSEM */
        "  testq %r10, %r10\n"
        "  jz 2f\n"
        "  orl $0x200000, %edi\n"           /* CLONE_CHILD_CLEARTID */
        "2:\n"
        "  xorl %edx, %edx\n"
        "  xorl %r8d, %r8d\n"
        "  movl $56, %eax\n"
        "  syscall\n"
        "  testq %rax, %rax\n"
        "  jnz 1f\n"
        "  popq %rax\n"
        "  popq %rdi\n"
        "  xorl %ebp, %ebp\n"
        "  call *%rax\n"
        "  movl $60, %eax\n"
        "  xorl %edi, %edi\n"
        "  syscall\n"
        "  hlt\n"
        "1:\n"
        "  ret\n"
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
        /* Outside the exempt range: traps to the SIGSYS handler, which finds the site's return address at [rsp]. */
        ".globl multios_fallback\n.hidden multios_fallback\n"
        "multios_fallback:\n"
        "  syscall\n"
        ".globl multios_fallback_end\n.hidden multios_fallback_end\n"
        "multios_fallback_end:\n"
        /* Reached only when the call did not trap: this thread has no SUD after all (a fork or
         * vfork child before its atfork handler turns it on; SUD is not inherited). The call ran
         * natively, which is right for the signal-state calls routed here: back to the site. */
        "  popq %rcx\n"
        "  jmp *%rcx\n");

static __thread uint64_t rng_state __attribute__((tls_model("initial-exec")));

static uint64_t rng_next(uint64_t *state) {
    uint64_t x = *state ? *state : (__rdtsc() | 1);
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* rng: the caller's generator state (a delegate thread has no TLS of its own). */
HIDDEN uint64_t multios_draw(long nr, uint64_t *rng) {
    struct cost *c = &multios_costs[nr];
    switch (c->kind) {
    case K_EXP: /* 4096 quantiles of the unit exponential, 16.16 fixed point */
        return (c->param * (uint64_t)multios_expq[rng_next(rng) & 4095]) >> 16;
    case K_SAMPLES:
        return c->nsamples ? c->samples[rng_next(rng) % c->nsamples] : 0;
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

/* The calls that may send a signal to the calling process itself. */
static int signals_self(long nr) {
    switch (nr) {
    case SYS_kill:
    case SYS_tkill:
    case SYS_tgkill:
    case SYS_rt_sigqueueinfo:
    case SYS_rt_tgsigqueueinfo:
    case SYS_pidfd_send_signal:
        return 1;
    default:
        return 0;
    }
}

/* A write-like call that failed with EPIPE, which comes with SIGPIPE on Linux (unless a send
 * asked MSG_NOSIGNAL); the calls are the LWK's (`lwk::syscall::sigpipe_raised`). */
static int sigpipe_due(long nr, long r, long a2, long a3) {
    if (r != -32 /* EPIPE */)
        return 0;
    switch (nr) {
    case SYS_write:
    case SYS_writev:
    case SYS_pwrite64:
    case SYS_pwritev:
    case SYS_pwritev2:
    case SYS_sendfile:
        return 1;
    case SYS_sendto:
        return !(a3 & 0x4000 /* MSG_NOSIGNAL */);
    case SYS_sendmsg:
        return !(a2 & 0x4000);
    default:
        return 0;
    }
}

/* Set while this thread waits for its delegate (shm). */
static __thread int busy __attribute__((tls_model("initial-exec")));

/* The signal whose handler last ran on this thread, and how many have (preload.c's wrap_handler,
 * which every handler of the program is installed behind under shm with delegates). */
__thread int multios_last_sig __attribute__((tls_model("initial-exec")));
__thread uint64_t multios_sig_seq __attribute__((tls_model("initial-exec")));

/* Calls that a handler's signal interrupts whether or not the handler has SA_RESTART (Linux
 * returns EINTR for them, or their remaining time: signal(7), "Interruption of system calls"). */
static int always_interrupted(long nr) {
    switch (nr) {
    case SYS_poll:
    case SYS_ppoll:
    case SYS_select:
    case SYS_pselect6:
    case SYS_epoll_wait:
    case SYS_epoll_pwait:
    case SYS_epoll_pwait2:
    case SYS_nanosleep:
    case SYS_clock_nanosleep:
    case SYS_rt_sigtimedwait:
    case SYS_rt_sigsuspend:
    case SYS_pause:
    case SYS_msgrcv:
    case SYS_msgsnd:
    case SYS_semop:
    case SYS_semtimedop:
    case SYS_io_getevents:
    case SYS_io_pgetevents:
    case SYS_mq_timedreceive:
    case SYS_mq_timedsend:
        return 1;
    default:
        return 0;
    }
}

/* Whether the return of the program's handler for `sig` during delegated call `nr` means that
 * Linux would have interrupted the call (EINTR): always for the calls above, else unless the
 * handler has SA_RESTART. */
static int handler_interrupts(long nr, int sig) {
    if (always_interrupted(nr))
        return 1;
    if (sig <= 0 || sig > 64)
        return 1;
    struct {
        void *handler;
        unsigned long flags;
        void *restorer;
        uint64_t mask;
    } k;
    if (multios_xsys(SYS_rt_sigaction, sig, 0, (long)&k, 8, 0, 0) != 0)
        return 1;
    return !(k.flags & 0x10000000 /* SA_RESTART */);
}

/* Interrupts the delegate's call: the kick signal, queued to the delegate thread with the
 * mailbox as its value (preload.c's kick handler counts it in kicks_seen and returns, so the call
 * gets EINTR, as the program's would have). */
static void kick(struct mbox *m) {
    long pid = multios_xsys(SYS_getpid, 0, 0, 0, 0, 0, 0);
    int info[32] = {0};
    info[0] = MULTIOS_KICK_SIG; /* si_signo */
    info[2] = -1;               /* si_code: SI_QUEUE */
    info[4] = (int)pid;         /* si_pid */
    info[5] = (int)multios_xsys(SYS_getuid, 0, 0, 0, 0, 0, 0);
    uint64_t v = (uint64_t)m; /* si_value */
    info[6] = (int)(v & 0xffffffffu);
    info[7] = (int)(v >> 32);
    multios_xsys(SYS_rt_tgsigqueueinfo, pid, m->tid, MULTIOS_KICK_SIG, (long)info, 0, 0);
}

/* Whether this thread is inside its own delegated call (a signal handler interrupted it). */
HIDDEN int multios_in_call(void) {
    return busy;
}

/* Serves one delegated call from the program's thread. */
HIDDEN long multios_delegate(long nr, long a0, long a1, long a2, long a3, long a4, long a5) {
    __atomic_fetch_add(&multios_del_cnt[nr], 1, __ATOMIC_RELAXED);
    if (multios_mode == MODE_MIGRATE) {
        /* Back to the CPUs the thread had, not to the compute set: a program that pinned its
         * own threads (sched_setaffinity is local) lost its mask at its first delegated call. A
         * move the kernel refuses (a seccomp filter of the program's, a cpuset without the
         * control CPUs) is counted for the report; the call then runs where the thread is. */
        cpu_set_t saved; /* not initialised: -mgeneral-regs-only, no memset; the kernel fills `len` bytes */
        long len = multios_xsys(SYS_sched_getaffinity, 0, sizeof saved, (long)&saved, 0, 0, 0);
        long out = multios_xsys(SYS_sched_setaffinity, 0, sizeof multios_control_set, (long)&multios_control_set, 0,
                                0, 0);
        if (out < 0)
            __atomic_fetch_add(&multios_move_out_failed, 1, __ATOMIC_RELAXED);
        multios_record(multios_spin(multios_draw(nr, &rng_state)));
        long r = multios_xsys(nr, a0, a1, a2, a3, a4, a5);
        multios_record(multios_spin(multios_draw(nr, &rng_state)));
        if (out >= 0) {
            long back = len > 0 ? multios_xsys(SYS_sched_setaffinity, 0, len, (long)&saved, 0, 0, 0)
                                : multios_xsys(SYS_sched_setaffinity, 0, sizeof multios_compute_set,
                                               (long)&multios_compute_set, 0, 0, 0);
            if (back < 0)
                __atomic_fetch_add(&multios_move_back_failed, 1, __ATOMIC_RELAXED);
        }
        return r;
    }
    if (multios_vf.solo) {
        /* A new process still sharing (vfork, posix_spawn) or holding a copy of (fork before its
         * atfork handler) its parent's mailbox: the delegate behind it serves the parent, so this
         * process makes the call itself, the f_c delivered in place (see struct vf). */
        multios_record(multios_spin(multios_draw(nr, &rng_state)));
        long r = multios_xsys(nr, a0, a1, a2, a3, a4, a5);
        multios_record(multios_spin(multios_draw(nr, &rng_state)));
        return r;
    }
    struct mbox *m = multios_my_mbox;
    if (!m || multios_my_gen != multios_fork_gen || busy || multios_renew_due) {
        /* A thread without a delegate (made by a raw clone), or a signal handler that interrupted
         * this thread's own delegated call (the mailbox is in use): the call runs here, uncharged. */
        __atomic_fetch_add(&multios_nodelegate, 1, __ATOMIC_RELAXED);
        return multios_xsys(nr, a0, a1, a2, a3, a4, a5);
    }
    busy = 1;
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
    /* Spin for the reply (no PAUSE: on Zen it costs tens of cycles, i.e. latency) while the
     * delegate spins f_c or makes a short call. Once the delegate has been inside the call for
     * multios_patience_ticks, the call is taken to block (a read from an empty pipe, a terminal, a
     * socket): the caller sleeps on `state` until the delegate's reply wakes it, so the compute CPU
     * goes to whatever else is runnable there — in a pipeline, the very process that will unblock
     * the call (a spinning reader used to hold the CPU its writer needed, issue #16). */
    /* A handler of the program that runs during the wait (its return bumps multios_sig_seq) would
     * natively have interrupted the call: then the delegate's call is interrupted too (a kick,
     * repeated every millisecond until the reply: one sent just before the delegate entered the
     * call is not lost). The futex sleep has a timeout so that a handler makes it return. */
    uint64_t polls = 0, seq0 = multios_sig_seq, kicked_at = 0;
    uint32_t kicks = 0;
    while (__atomic_load_n(&m->state, __ATOMIC_ACQUIRE) != 2) {
        if ((++polls & 255) != 0)
            continue;
        if (multios_sig_seq != seq0) {
            seq0 = multios_sig_seq;
            if (!kicks && m->tid > 0 && handler_interrupts(nr, multios_last_sig)) {
                kick(m);
                kicks = 1;
                kicked_at = __rdtsc();
            }
        }
        if (kicks && __rdtsc() - kicked_at > multios_patience_ticks * 32) {
            kick(m);
            kicks++;
            kicked_at = __rdtsc();
        }
        uint64_t c0 = m->call_t0;
        /* Signed: the delegate read its TSC on another CPU, which may be a little ahead. */
        if (!c0 || (int64_t)(__rdtsc() - c0) <= (int64_t)multios_patience_ticks)
            continue;
        /* Dekker with the delegate: waiting = 1, then state; it stores state = 2, then reads waiting. */
        __atomic_store_n(&m->waiting, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&m->state, __ATOMIC_SEQ_CST) == 1) {
            struct {
                long sec, nsec;
            } limit = {0, kicks ? 1000000 : 100000000};
            multios_xsys(SYS_futex, (long)&m->state, FUTEX_WAIT, 1, (long)&limit, 0, 0);
        }
        __atomic_store_n(&m->waiting, 0, __ATOMIC_SEQ_CST);
    }
    long r = m->nr;
    /* Every kick sent must have reached the delegate before it takes another call, which a late
     * one would interrupt: it is delivered at the delegate's next kernel entry (it yields its CPU
     * within microseconds of idling). */
    for (uint64_t spins = 0; kicks && __atomic_load_n(&m->kicks_seen, __ATOMIC_ACQUIRE) < kicks; spins++)
        if (spins > 4096)
            multios_xsys(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
    if (kicks)
        __atomic_store_n(&m->kicks_seen, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&m->state, 0, __ATOMIC_RELEASE);
    busy = 0;
    /* A signal handler changed this thread's credentials during the call: the delegate that made
     * it still has the old ones and is replaced now, before another call goes to it. */
    if (multios_renew_due)
        multios_renew_delegate();
    /* A signal the call sent to this process (raise's tgkill, kill of its own pid, sigqueue) is
     * pending on this thread once the delegate has made the call, but the kernel delivers it
     * only when this thread next enters it, or when the IPI the send kicked it with arrives:
     * Linux delivers it before the call returns. On a VM whose IPIs take up to milliseconds the
     * program's next sigprocmask blocked it first and its next raise merged with it (30 of 40
     * handlers ran in `sud_off`'s signal test). A raw getpid delivers it here. */
    if (signals_self(nr))
        multios_xsys(SYS_getpid, 0, 0, 0, 0, 0, 0);
    /* A write to a pipe or socket without readers: Linux sends the writer SIGPIPE, but the kernel
     * sent it to the delegate thread that made the call, which blocks every signal, and the
     * program saw only EPIPE (`yes | head -1` exited 1 instead of dying by SIGPIPE). Sent to this
     * thread, the kernel acts on it as on the program's own write: default, ignored, caught or
     * blocked. */
    if (sigpipe_due(nr, r, a2, a3))
        multios_xsys(SYS_tgkill, multios_xsys(SYS_getpid, 0, 0, 0, 0, 0, 0),
                     multios_xsys(SYS_gettid, 0, 0, 0, 0, 0, 0), 13 /* SIGPIPE */, 0, 0, 0);
    return r;
}
