/* Issue #16: a new thread starts with its creator's floating-point state, as Linux's clone copies
 * it: the rounding mode (x87 and SSE), flush-to-zero, the exception masks. In the LWK a new
 * thread's vCPU started with the defaults (round to nearest, no FTZ): 1/3 rounded the other way.
 * The control words are set and read directly (no libm). */
#include <pthread.h>
#include <stdio.h>

static volatile double three = 3.0, tiny = 1e-310;
static volatile long double lthree = 3.0L;

static unsigned mxcsr(void) {
    unsigned v;
    __asm__ volatile("stmxcsr %0" : "=m"(v));
    return v;
}

static unsigned short x87cw(void) {
    unsigned short v;
    __asm__ volatile("fnstcw %0" : "=m"(v));
    return v;
}

static void *report(void *who) {
    volatile double third = 1.0 / three, half_tiny = tiny * 0.5;
    volatile long double lthird = 1.0L / lthree;
    /* The control bits only: the status flags (bits 0-5) are what the thread raised itself. */
    printf("%s: mxcsr %#x, x87 cw %#x, 1/3 %a, 1/3 (x87) %La, tiny/2 %g\n", (const char *)who, mxcsr() & ~0x3fu,
           x87cw(), third, lthird, half_tiny);
    return NULL;
}

int main(void) {
    report("main, default");
    /* Round upward in SSE (RC = 10) with flush-to-zero, and in the x87 unit (RC = 10). */
    unsigned m = (mxcsr() & ~0x6000u) | 0x4000u | 0x8000u;
    __asm__ volatile("ldmxcsr %0" : : "m"(m));
    unsigned short cw = (unsigned short)((x87cw() & ~0x0c00u) | 0x0800u);
    __asm__ volatile("fldcw %0" : : "m"(cw));
    report("main, set");
    pthread_t t;
    pthread_create(&t, NULL, report, "thread");
    pthread_join(t, NULL);
    return 0;
}
