/* The FPU state a signal handler starts with: the interrupted code sets MXCSR to flush-to-zero and
 * denormals-are-zero and keeps values in xmm and x87 registers; the handler must see MXCSR 0x1f80
 * and the x87 control word 0x37f (Linux resets the FPU for handlers), and after it returns the
 * interrupted code's MXCSR and values must be back. Output must match native. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <xmmintrin.h>

static volatile unsigned handler_mxcsr;
static volatile unsigned short handler_fcw;

static void handler(int sig) {
    (void)sig;
    handler_mxcsr = _mm_getcsr();
    unsigned short cw;
    __asm__ volatile("fnstcw %0" : "=m"(cw));
    handler_fcw = cw;
    /* Use the FPU in the handler: must not leak into the interrupted code. */
    volatile double x = 1e-310;
    x = x * 0.5;
    (void)x;
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigaction(SIGUSR1, &sa, 0);
    unsigned before = _mm_getcsr();
    _mm_setcsr(before | 0x8040); /* FTZ | DAZ */
    unsigned short cw = 0x27f;    /* x87 at double precision */
    __asm__ volatile("fldcw %0" : : "m"(cw));
    volatile double kept = 1.0 / 3.0;
    raise(SIGUSR1);
    unsigned after = _mm_getcsr();
    unsigned short cw_after;
    __asm__ volatile("fnstcw %0" : "=m"(cw_after));
    printf("handler: MXCSR %#x, x87 control %#x\n", handler_mxcsr, handler_fcw);
    printf("after: MXCSR FTZ|DAZ kept %d, x87 control %#x, value kept %d\n", (after & 0x8040) == 0x8040,
           cw_after, kept == 1.0 / 3.0);
    return 0;
}
