/* The preload library's alternate signal stacks (issue #4): with Syscall User Dispatch on, every
 * intercepted call raises SIGSYS, whose frame the kernel writes below the program's stack pointer
 * unless the handler runs on an alternate stack — ≈ 3.5 KB with the XSAVE state, where Go
 * guarantees a goroutine ≈ 800 bytes at a system call (a cgo program crashed 5 runs in 12 with
 * corrupted goroutine stacks, "fatal error: stack not a power of 2"). Each thread with SUD
 * therefore gets a stack of the library's own (a guard page and ALT_SIZE bytes, raw mmap),
 * installed whenever the program has none of its own; the SIGSYS and kick handlers have
 * SA_ONSTACK.
 *
 * The program sees native sigaltstack semantics: its own setting (disabled when it set none) is
 * what it reads, its own stack is the kernel's while it has one (the library's handlers then use
 * it: Go's 32 KiB gsignal stacks serve), and the library's comes back when it disables its own.
 * A program handler with SA_ONSTACK but no stack of its own is moved off the library's stack to
 * where Linux would have put its frame, on the interrupted stack (multios_altstack_leave).
 *
 * Compiled with -mgeneral-regs-only: multios_altstack_call runs in the program's context between
 * its `syscall` site and its next instruction, with only the general registers saved. */
#include "preload.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>

#define raw6 multios_xsys
#define GUARD 4096
#define ALT_SIZE (64 * 1024) /* the XSAVE frame (≈ 3.5 KB; ≈ 11 KB with AMX) and the handler */
#define KERNEL_MINSIGSTKSZ 2048
#define FLAG_BITS ((int)(1U << 31)) /* SS_AUTODISARM */

/* The kernel's stack_t. */
struct kstack {
    void *sp;
    int flags;
    unsigned long size;
};

HIDDEN int multios_altstack_on; /* SUD threads get the library's stack (set by the constructor) */
/* This thread's stack (its guard page's address; 0: none). */
static __thread char *alt_base __attribute__((tls_model("initial-exec")));
/* The flags the kernel would hold natively while the program has no stack of its own: those of its
 * last disabling call (SS_DISABLE and SS_AUTODISARM; it reads the latter back), SS_DISABLE in a
 * new thread, 0 or SS_DISABLE at start (probed). They decide what a handler's rt_sigreturn does
 * natively to a stack the handler set: with 0 the frame's saved setting is refused (ENOMEM,
 * ignored) and the new stack stays; with SS_DISABLE it is undone. */
static __thread int prog_raw __attribute__((tls_model("initial-exec")));
/* A stack the program set while running on the library's (a handler interrupting a call that the
 * SIGSYS handler served there, where the kernel refuses a change: EPERM): shown to it while it
 * stays there, dropped once it left (its handler returned: Linux then restores the stack the
 * frame saved, i.e. none). */
static __thread struct kstack pend __attribute__((tls_model("initial-exec")));
static __thread int pend_on __attribute__((tls_model("initial-exec")));
static pthread_key_t free_key;
static int free_key_ok;

static struct kstack ours(void) {
    struct kstack s = {alt_base + GUARD, 0, ALT_SIZE};
    return s;
}

static int is_ours(const struct kstack *k) {
    return alt_base && !(k->flags & SS_DISABLE) && k->sp == alt_base + GUARD && k->size == ALT_SIZE;
}

/* At a thread's exit (a pthread key's destructor): the kernel's stack is taken off ours, then ours
 * is unmapped. Left mapped when the thread is running on it (an exit from a handler there). */
static void free_ours(void *unused) {
    (void)unused;
    if (!alt_base)
        return;
    struct kstack cur;
    if (raw6(SYS_sigaltstack, 0, (long)&cur, 0, 0, 0, 0) != 0)
        return;
    if (is_ours(&cur)) {
        if (cur.flags & SS_ONSTACK)
            return;
        struct kstack off = {0, SS_DISABLE, 0};
        if (raw6(SYS_sigaltstack, (long)&off, 0, 0, 0, 0, 0) != 0)
            return;
    }
    raw6(SYS_munmap, (long)alt_base, GUARD + ALT_SIZE, 0, 0, 0, 0);
    alt_base = 0;
}

/* Gives the calling thread its stack (the constructor, a new thread, a fork child, before SUD is
 * turned on): made once per thread (a fork child keeps its copy of its parent's), installed
 * unless the program has one of its own there (then it comes in when the program disables it). */
HIDDEN void multios_altstack_thread(void) {
    if (!multios_altstack_on)
        return;
    if (!free_key_ok)
        /* Keys below 32 live in the thread's own block: setting one allocates nothing. */
        free_key_ok = pthread_key_create(&free_key, free_ours) == 0 && free_key < 32 ? 1 : -1;
    if (!alt_base) {
        char *b = (char *)raw6(SYS_mmap, 0, GUARD + ALT_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                               -1, 0);
        if ((unsigned long)b >= -4095UL)
            return;
        if (raw6(SYS_mprotect, (long)(b + GUARD), ALT_SIZE, PROT_READ | PROT_WRITE, 0, 0, 0) != 0) {
            raw6(SYS_munmap, (long)b, GUARD + ALT_SIZE, 0, 0, 0, 0);
            return;
        }
        alt_base = b;
        pend_on = 0;
        prog_raw = SS_DISABLE;
    }
    struct kstack cur, mine = ours();
    if (raw6(SYS_sigaltstack, 0, (long)&cur, 0, 0, 0, 0) == 0 && (cur.flags & SS_DISABLE)) {
        /* The kernel's flags: a request equal to the present setting succeeds without a change;
         * {0, 0, 0} otherwise fails (ENOMEM, too small) and changes nothing either. */
        struct kstack probe = {0, cur.flags & FLAG_BITS, 0};
        prog_raw = raw6(SYS_sigaltstack, (long)&probe, 0, 0, 0, 0, 0) == 0 ? probe.flags : SS_DISABLE | probe.flags;
        raw6(SYS_sigaltstack, (long)&mine, 0, 0, 0, 0, 0);
    }
    if (free_key_ok == 1)
        pthread_setspecific(free_key, alt_base);
}

/* Whether the calling thread has a stack of the library's (its sigaltstack calls then come to
 * multios_altstack_call). */
HIDDEN int multios_altstack_mine(void) {
    return alt_base != 0;
}

/* Copies n bytes between this process's memory and the program's buffer, through the kernel so
 * that a bad pointer gives EFAULT (as natively) instead of a fault in the library. */
static int copy_user(void *to, const void *from, unsigned long n, int nr) {
    struct iovec local = {nr == SYS_process_vm_readv ? to : (void *)from, n};
    struct iovec remote = {nr == SYS_process_vm_readv ? (void *)from : to, n};
    long pid = raw6(SYS_getpid, 0, 0, 0, 0, 0, 0);
    return raw6(nr, pid, (long)&local, 1, (long)&remote, 1, 0) == (long)n;
}

/* The program's sigaltstack(ss, oss). */
static long serve(const struct kstack *ss, struct kstack *oss) {
    struct kstack cur, mine = ours();
    if (!alt_base || raw6(SYS_sigaltstack, 0, (long)&cur, 0, 0, 0, 0) != 0)
        return raw6(SYS_sigaltstack, (long)ss, (long)oss, 0, 0, 0, 0);
    if (!is_ours(&cur)) {
        /* The program's own: the kernel answers; if the call disabled it, ours comes back. */
        long r = raw6(SYS_sigaltstack, (long)ss, (long)oss, 0, 0, 0, 0);
        if (r == 0 && ss && raw6(SYS_sigaltstack, 0, (long)&cur, 0, 0, 0, 0) == 0 && (cur.flags & SS_DISABLE)) {
            prog_raw = cur.flags; /* SS_DISABLE and the call's SS_AUTODISARM */
            raw6(SYS_sigaltstack, (long)&mine, 0, 0, 0, 0, 0);
        }
        return r;
    }
    /* Ours: the program has none (or one it set while on ours, `pend`). */
    int on_ours = (cur.flags & SS_ONSTACK) != 0;
    if (pend_on && !on_ours) {
        /* It left ours since (its handler returned): natively that return kept the stack it set
         * when the kernel's flags were 0 (see prog_raw), which it then gets. */
        pend_on = 0;
        if ((prog_raw & ~FLAG_BITS) == 0) {
            struct kstack off = {0, SS_DISABLE, 0};
            raw6(SYS_sigaltstack, (long)&off, 0, 0, 0, 0, 0);
            if (raw6(SYS_sigaltstack, (long)&pend, 0, 0, 0, 0, 0) != 0)
                raw6(SYS_sigaltstack, (long)&mine, 0, 0, 0, 0, 0);
            return serve(ss, oss);
        }
    }
    struct kstack old = {0, SS_DISABLE | (prog_raw & FLAG_BITS), 0}, want;
    if (pend_on)
        old = pend;
    if (ss) {
        if (!copy_user(&want, ss, sizeof want, SYS_process_vm_readv))
            return -EFAULT;
        int mode = want.flags & ~FLAG_BITS;
        if (mode != SS_DISABLE && mode != SS_ONSTACK && mode != 0)
            return -EINVAL;
        if (mode == SS_DISABLE) {
            pend_on = 0;
            prog_raw = want.flags;
        } else if (on_ours) {
            if (want.size < KERNEL_MINSIGSTKSZ)
                return -ENOMEM;
            pend = want;
            pend.flags &= FLAG_BITS;
            pend_on = 1;
        } else {
            /* Ours out, the program's in (the kernel checks it: ENOMEM, as natively). */
            struct kstack off = {0, SS_DISABLE, 0};
            raw6(SYS_sigaltstack, (long)&off, 0, 0, 0, 0, 0);
            long r = raw6(SYS_sigaltstack, (long)&want, 0, 0, 0, 0, 0);
            if (r != 0) {
                raw6(SYS_sigaltstack, (long)&mine, 0, 0, 0, 0, 0);
                return r;
            }
        }
    }
    if (oss && !copy_user(oss, &old, sizeof old, SYS_process_vm_writev))
        return -EFAULT;
    return 0;
}

/* The program's sigaltstack call, in its own context (multios_altstack_entry below). */
HIDDEN long multios_altstack_call(const struct kstack *ss, struct kstack *oss) {
    __atomic_fetch_add(&multios_loc_cnt[SYS_sigaltstack], 1, __ATOMIC_RELAXED);
    return serve(ss, oss);
}

/* Entered from the SIGSYS handler (preload.c) at the program's sigaltstack call: rcx holds the
 * site's return address, the program's registers and stack are its own. The red zone is skipped;
 * registers other than rax, rcx and r11 (the flags, as a `syscall` leaves them) are kept. */
__asm__(".text\n"
        ".globl multios_altstack_entry\n.hidden multios_altstack_entry\n"
        "multios_altstack_entry:\n"
        "  leaq -128(%rsp), %rsp\n"
        "  pushq %rcx\n"
        "  pushfq\n"
        "  pushq %rdx\n"
        "  pushq %rsi\n"
        "  pushq %rdi\n"
        "  pushq %r8\n"
        "  pushq %r9\n"
        "  pushq %r10\n"
        "  pushq %rbp\n"
        "  movq %rsp, %rbp\n"
        "  andq $-16, %rsp\n"
        "  call multios_altstack_call\n"
        "  movq %rbp, %rsp\n"
        "  popq %rbp\n"
        "  popq %r10\n"
        "  popq %r9\n"
        "  popq %r8\n"
        "  popq %rdi\n"
        "  popq %rsi\n"
        "  popq %rdx\n"
        "  movq (%rsp), %r11\n"
        "  popfq\n"
        "  popq %rcx\n"
        "  leaq 128(%rsp), %rsp\n"
        "  jmp *%rcx\n");

__attribute__((noreturn)) static void enter_handler(char *frame, void *handler, long sig, void *si, void *uc) {
    /* As the kernel enters a handler: rsp at the frame (its return address, the restorer, first),
     * rdi, rsi, rdx the arguments, rax 0. */
    __asm__ volatile("movq %0, %%rsp\n\t"
                     "xorl %%eax, %%eax\n\t"
                     "jmp *%1\n\t"
                     :
                     : "a"(frame), "c"(handler), "D"(sig), "S"(si), "d"(uc)
                     : "memory");
    __builtin_unreachable();
}

/* Every program handler runs behind preload.c's wrap_handler while threads have the library's
 * stack; before it runs:
 * - a frame that saved ours as the stack setting to restore (delivered while the program had none)
 *   gets what Linux would have saved, {0, prog_raw, 0}, when that makes its rt_sigreturn keep a
 *   stack the handler sets (prog_raw 0); with SS_DISABLE ours stays in it (then restored, as the
 *   program's "none" natively is);
 * - a handler with SA_ONSTACK that the kernel ran on ours because the program has no stack of its
 *   own would natively have its frame on the interrupted stack. When the frame is the only one on
 *   ours (the interrupted code was not on it), the frame — the restorer's address, the ucontext,
 *   the siginfo, the extended state above them — is copied to where Linux would have put it
 *   (below the interrupted stack pointer and its red zone, 64-byte aligned) and the handler
 *   entered there, never returning here; its rt_sigreturn restores from the copy. Returns when
 *   the frame stays (on the program's own stack, on the interrupted one, nested on ours). */
HIDDEN void multios_altstack_leave(int sig, void *siv, void *ucv, void *handler, int onstack) {
    siginfo_t *si = siv;
    ucontext_t *uc = ucv;
    if (!alt_base)
        return;
    char *lo = alt_base + GUARD, *top = lo + ALT_SIZE, *frame = (char *)uc - 8;
    /* The kernel saves its flags as they are (not SS_ONSTACK): a frame nested on ours is told by
     * the interrupted stack pointer. */
    unsigned long sp = (unsigned long)uc->uc_mcontext.gregs[REG_RSP];
    if (uc->uc_stack.ss_sp != lo || uc->uc_stack.ss_size != ALT_SIZE || (uc->uc_stack.ss_flags & SS_DISABLE) ||
        (sp > (unsigned long)lo && sp <= (unsigned long)top))
        return;
    if ((prog_raw & ~FLAG_BITS) == 0) {
        uc->uc_stack.ss_sp = 0;
        uc->uc_stack.ss_flags = prog_raw;
        uc->uc_stack.ss_size = 0;
    }
    if (!onstack || frame < lo || frame >= top || (char *)si < frame || (char *)si >= top)
        return;
    char *fp = (char *)uc->uc_mcontext.fpregs;
    if (fp && (fp < frame || fp >= top))
        return;
    unsigned long len = (unsigned long)(top - frame);
    char *dest = (char *)(((sp - 128) & ~63UL) - len);
    char *d = dest;
    const char *s = frame;
    unsigned long n = len;
    __asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
    ucontext_t *duc = (ucontext_t *)(dest + ((char *)uc - frame));
    if (fp)
        duc->uc_mcontext.fpregs = (fpregset_t)(dest + (fp - frame));
    enter_handler(dest, handler, sig, dest + ((char *)si - frame), duc);
}
