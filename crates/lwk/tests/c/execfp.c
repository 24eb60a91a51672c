/* Issue #16: a program starts with the initial floating-point state after execve, whatever the
 * program before it set (Linux's exec resets the FPU). In the LWK the old program's MXCSR — its
 * rounding mode and flush-to-zero — reached the new one (KVM_SET_FPU left it in place). */
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    unsigned m;
    unsigned short cw;
    __asm__ volatile("stmxcsr %0" : "=m"(m));
    __asm__ volatile("fnstcw %0" : "=m"(cw));
    printf("%s: mxcsr %#x, x87 cw %#x\n", argc > 1 ? "after exec" : "before", m & ~0x3fu, cw);
    if (argc > 1)
        return 0;
    m |= 0xe000; /* round toward zero, flush-to-zero */
    __asm__ volatile("ldmxcsr %0" : : "m"(m));
    cw |= 0x0c00;
    __asm__ volatile("fldcw %0" : : "m"(cw));
    fflush(stdout);
    execl(argv[0], argv[0], "again", (char *)0);
    perror("execl");
    return 1;
}
