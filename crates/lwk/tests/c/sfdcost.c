/* Issue #14, the cost of signalfd in the LWK (not a test: docs/BENCHMARKS.md runs it natively and
 * in the LWK side by side). `sfdcost N` prints the median time of N read()s of 64 bytes from
 * /dev/zero without a signalfd and with one open (in the LWK each read then costs one fstat
 * more), and of N raise(SIGUSR1) + read() of the signal from a signalfd. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

static long now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}
static int cmp(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}
static long median(long *t, long n) {
    qsort(t, n, sizeof *t, cmp);
    return t[n / 2];
}
static long reads(int fd, long *t, long n) {
    char buf[64];
    for (long i = 0; i < n; i++) {
        long t0 = now();
        if (read(fd, buf, sizeof buf) != sizeof buf) exit(2);
        t[i] = now() - t0;
    }
    return median(t, n);
}
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 20000L;
    long *t = calloc(n, sizeof *t);
    int zero = open("/dev/zero", O_RDONLY);
    long plain = reads(zero, t, n);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, NULL);
    int sfd = signalfd(-1, &set, SFD_CLOEXEC);
    long with = reads(zero, t, n);
    struct signalfd_siginfo s;
    for (long i = 0; i < n; i++) {
        long t0 = now();
        raise(SIGUSR1);
        if (read(sfd, &s, sizeof s) != sizeof s || s.ssi_signo != SIGUSR1) exit(3);
        t[i] = now() - t0;
    }
    long round = median(t, n);
    printf("read_ns %ld read_with_signalfd_ns %ld raise_and_read_signalfd_ns %ld\n", plain, with, round);
    return 0;
}
