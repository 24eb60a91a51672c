/* Issue #16: signals ignored when a program starts stay ignored (nohup, a shell's background job,
 * a parent that ignores SIGPIPE). `ignored SIG… -- PROG ARGS…` ignores the signals (the raw call:
 * glibc refuses its own 32 and 33) and execs PROG; `ignored` alone reports what it inherited and
 * writes to a pipe with no reader: EPIPE where SIGPIPE is ignored, death by SIGPIPE otherwise. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct kernel_sigaction {
    unsigned long handler, flags, restorer, mask;
};

int main(int argc, char **argv) {
    if (argc > 1) {
        int i = 1;
        for (; i < argc && strcmp(argv[i], "--"); i++) {
            struct kernel_sigaction a = {(unsigned long)SIG_IGN, 0, 0, 0};
            syscall(SYS_rt_sigaction, atoi(argv[i]), &a, 0, 8);
        }
        execv(argv[i + 1], argv + i + 1);
        perror("execv");
        return 127;
    }
    for (int s = 1; s <= 64; s++) {
        struct kernel_sigaction old;
        if (syscall(SYS_rt_sigaction, s, 0, &old, 8) == 0 && old.handler == (unsigned long)SIG_IGN)
            printf("ignored %d\n", s);
    }
    fflush(stdout);
    int p[2];
    if (pipe(p)) return 1;
    close(p[0]);
    ssize_t r = write(p[1], "x", 1);
    printf("write %zd %s\n", r, r < 0 ? strerror(errno) : "");
    return 0;
}
