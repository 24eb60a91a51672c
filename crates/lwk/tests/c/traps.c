/* CPU exceptions as signals: reads and writes of unmapped and non-canonical addresses, an integer
 * division by zero, ud2 and int3, each caught by a handler that prints what Linux puts in siginfo
 * and the sigcontext and leaves with siglongjmp; then a handler that moves rip past the faulting
 * instruction and returns. The output must match native. */
#define _GNU_SOURCE
#include <fenv.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>

static sigjmp_buf env;
static volatile int divisor;
static int *volatile bad;

static const char *name(int sig) {
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGBUS: return "SIGBUS";
    }
    return "?";
}

static void leave(int sig, siginfo_t *si, void *uc_) {
    ucontext_t *uc = uc_;
    printf("%s code %d addr %#lx trapno %lld err %lld\n", name(sig), si->si_code,
           (unsigned long)si->si_addr, (long long)uc->uc_mcontext.gregs[REG_TRAPNO],
           (long long)uc->uc_mcontext.gregs[REG_ERR]);
    siglongjmp(env, sig);
}

static int skipped;
static void skip(int sig, siginfo_t *si, void *uc_) {
    (void)sig;
    (void)si;
    ucontext_t *uc = uc_;
    uc->uc_mcontext.gregs[REG_RIP] += 2; /* ud2 is 2 bytes */
    skipped++;
}

static void on(int sig, void (*h)(int, siginfo_t *, void *)) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = h;
    sa.sa_flags = SA_SIGINFO;
    sigaction(sig, &sa, 0);
}

int main(void) {
    on(SIGSEGV, leave);
    on(SIGFPE, leave);
    on(SIGILL, leave);
    on(SIGTRAP, leave);
    setvbuf(stdout, 0, _IONBF, 0);

    bad = (int *)8;
    if (sigsetjmp(env, 1) == 0)
        printf("read %d\n", *bad);
    bad = (int *)0x10;
    if (sigsetjmp(env, 1) == 0)
        *bad = 1;
    /* A non-canonical address: #GP, SIGSEGV with SI_KERNEL and no address. */
    bad = (int *)0x8000000000000000ull;
    if (sigsetjmp(env, 1) == 0)
        printf("read %d\n", *bad);
    divisor = 0;
    if (sigsetjmp(env, 1) == 0)
        printf("quotient %d\n", 7 / divisor);
    if (sigsetjmp(env, 1) == 0)
        __asm__ volatile("ud2");
    if (sigsetjmp(env, 1) == 0)
        __asm__ volatile("int3");
    /* Twice in a row: the handler's mask was restored by siglongjmp(…, 1). */
    if (sigsetjmp(env, 1) == 0)
        __asm__ volatile("ud2");

    /* Floating-point traps enabled, as scientific codes do to catch NaNs and infinities: SSE
     * divide by zero and invalid give SIGFPE with FPE_FLTDIV and FPE_FLTINV. */
    volatile double zero = 0.0, one = 1.0;
    feenableexcept(FE_DIVBYZERO | FE_INVALID);
    if (sigsetjmp(env, 1) == 0)
        printf("quotient %f\n", one / zero);
    feenableexcept(FE_DIVBYZERO | FE_INVALID);
    if (sigsetjmp(env, 1) == 0)
        printf("quotient %f\n", zero / zero);
    fedisableexcept(FE_ALL_EXCEPT);
    feclearexcept(FE_ALL_EXCEPT);

    on(SIGILL, skip);
    __asm__ volatile("ud2");
    __asm__ volatile("ud2");
    printf("returned past ud2 %d times\n", skipped);
    return 0;
}
