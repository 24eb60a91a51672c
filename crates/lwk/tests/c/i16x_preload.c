/* Issue #16: a library the guest would preload into a program that runs on Linux: it says so. */
#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void said(void) {
    char m[] = "i16x: PRELOADED into a program on Linux\n";
    write(2, m, sizeof m - 1);
}
