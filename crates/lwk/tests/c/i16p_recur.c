/* Issue #16: recursion N frames of ~1 KiB deep on the main thread, whose stack must follow the
 * soft RLIMIT_STACK (the LWK reserved 8 MiB whatever the limit). */
#include <stdio.h>
#include <stdlib.h>

static int depth(int n) {
    volatile char buf[1024];
    buf[0] = (char)n;
    if (n == 0) return buf[0];
    return depth(n - 1) + buf[0];
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 100;
    printf("%d\n", depth(n));
    return 0;
}
