/* Issue #16: execv(argv[1], argv + 1), saying why it failed (a `#!` script whose interpreter is
 * a script in turn runs up to Linux's 5 levels, then ELOOP). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    execv(argv[1], argv + 1);
    printf("execv %s failed: %s\n", argv[1], strerrorname_np(errno));
    return 1;
}
