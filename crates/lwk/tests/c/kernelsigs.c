/* Signals the kernel sends with a call's error (reported 2026-11-28): a write to a pipe without
 * readers with SIGPIPE blocked left nothing pending in the LWK (natively SIGPIPE stays pending and
 * kills once unblocked), splice into such a pipe raised none, and a write past RLIMIT_FSIZE gave
 * EFBIG without SIGXFSZ. Modes: "blocked" (SIGPIPE blocked, then unblocked: dies of it), "splice"
 * (dies of SIGPIPE), "xfsz" (a handler sees SIGXFSZ, the write gets EFBIG), "xfsz-die" (dies of
 * SIGXFSZ). Prints what it saw on stdout before each step. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static volatile int caught;
static void on_xfsz(int s) { caught = s; }

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    setvbuf(stdout, NULL, _IONBF, 0);
    if (!strcmp(mode, "blocked") || !strcmp(mode, "splice")) {
        int p[2];
        if (pipe(p))
            return 2;
        close(p[0]);
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGPIPE);
        long r;
        if (!strcmp(mode, "blocked")) {
            sigprocmask(SIG_BLOCK, &s, 0);
            r = write(p[1], "x", 1);
        } else {
            int f = open("/proc/self/exe", O_RDONLY);
            r = splice(f, 0, p[1], 0, 4, 0);
        }
        int e = errno;
        sigset_t pend;
        sigpending(&pend);
        printf("%s: %ld %s, SIGPIPE pending %d\n", mode, r, strerror(e), sigismember(&pend, SIGPIPE));
        sigprocmask(SIG_UNBLOCK, &s, 0);
        printf("still here\n");
        return 0;
    }
    char path[] = "/tmp/multios-xfsz-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 2;
    unlink(path);
    if (!strcmp(mode, "xfsz"))
        signal(SIGXFSZ, on_xfsz);
    struct rlimit r = {1024, RLIM_INFINITY};
    setrlimit(RLIMIT_FSIZE, &r);
    char buf[5000] = {0};
    long n = write(fd, buf, sizeof buf);
    int e = errno;
    printf("%s: first write %ld\n", mode, n);
    n = write(fd, buf, sizeof buf);
    e = errno;
    printf("%s: second write %ld %s, handler saw %d\n", mode, n, n < 0 ? strerror(e) : "", caught);
    return 0;
}
