/* Issue #13: the function overrides and the program's floating-point state.
 *   overridefp pool:  a pooled thread (lwk-threads) starts with its creator's MXCSR and x87
 *                     control word, not what the worker's previous job left;
 *   overridefp clock: the clock overrides (tsc) do no floating point under the program's MXCSR:
 *                     with every SSE exception unmasked, the first clock_gettime raised SIGFPE
 *                     (inexact) inside the override, and the flags it raised were the program's.
 * The control words are read and set directly (no libm). Output must equal the native run's. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static unsigned get_mxcsr(void) {
    unsigned v;
    __asm__ volatile("stmxcsr %0" : "=m"(v));
    return v;
}
static void set_mxcsr(unsigned v) { __asm__ volatile("ldmxcsr %0" : : "m"(v)); }
static unsigned short get_cw(void) {
    unsigned short v;
    __asm__ volatile("fnstcw %0" : "=m"(v));
    return v;
}
static void set_cw(unsigned short v) { __asm__ volatile("fldcw %0" : : "m"(v)); }

static volatile double three = 3.0;

static void *job(void *arg) {
    volatile double third = 1.0 / three;
    printf("job %ld: mxcsr %#x, x87 cw %#x, 1/3 %a\n", (long)arg, get_mxcsr() & ~0x3fu, get_cw(), third);
    /* What a job leaves behind: round down, no FTZ, x87 round toward zero, overflow unmasked. */
    set_mxcsr((get_mxcsr() & ~0xe000u & ~0x0400u) | 0x2000u);
    set_cw(0x0f7f);
    return NULL;
}

static void on_fpe(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)uc;
    printf("SIGFPE code %d\n", si->si_code);
    _exit(3);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc > 1 && !strcmp(argv[1], "pool")) {
        for (long i = 0; i < 3; i++) {
            if (i == 1) {
                set_mxcsr((get_mxcsr() & ~0x6000u) | 0x4000u | 0x8040u); /* round up, FTZ, DAZ */
                set_cw((unsigned short)((get_cw() & ~0x0c00u) | 0x0800u));
            }
            pthread_t t;
            pthread_create(&t, NULL, job, (void *)i);
            pthread_join(t, NULL);
        }
        printf("main: mxcsr %#x, x87 cw %#x\n", get_mxcsr() & ~0x3fu, get_cw());
        return 0;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fpe;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGFPE, &sa, NULL);
    /* Every SSE exception unmasked, round up, FTZ; flags clear. */
    set_mxcsr((get_mxcsr() & ~0x1f80u & ~0x3fu & ~0x6000u) | 0x4000u | 0x8000u);
    unsigned before = get_mxcsr();
    struct timespec ts;
    struct timeval tv;
    int bad = 0;
    for (int i = 0; i < 1000; i++) {
        bad += clock_gettime(CLOCK_MONOTONIC, &ts) != 0;
        bad += clock_gettime(CLOCK_REALTIME, &ts) != 0;
        bad += clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0;
        bad += clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0;
        bad += gettimeofday(&tv, NULL) != 0;
        bad += time(NULL) == (time_t)-1;
    }
    unsigned after = get_mxcsr();
    set_mxcsr(0x1f80);
    printf("clocks: %d failed, mxcsr before %#x, after %#x\n", bad, before, after);
    return 0;
}
