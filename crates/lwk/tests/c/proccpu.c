/* Issue #16: the process CPU clock (CLOCK_PROCESS_CPUTIME_ID and the clocks clock_getcpuclockid
 * makes for pid 0 and the own pid), getrusage(RUSAGE_SELF) and times() count the program's own
 * threads: in the LWK they counted the whole VMM (the proxy polling after each call), 1.7-2.2
 * times the thread clock of a single busy thread making calls. Prints "ok" lines natively; the
 * numbers go to stderr. Bounds are loose: the machine is shared. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/times.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile double sink;

static double clk(clockid_t c) {
    struct timespec t;
    if (clock_gettime(c, &t))
        return -1;
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static double usage_self(void) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_utime.tv_sec + r.ru_utime.tv_usec * 1e-6 + r.ru_stime.tv_sec + r.ru_stime.tv_usec * 1e-6;
}

static double times_self(void) {
    struct tms t;
    times(&t);
    return (double)(t.tms_utime + t.tms_stime) / sysconf(_SC_CLK_TCK);
}

/* Computes `sec` of this thread's CPU time with a getppid() every 20 000 iterations. */
static void busy(double sec) {
    double t0 = clk(CLOCK_THREAD_CPUTIME_ID);
    long i = 0;
    while (clk(CLOCK_THREAD_CPUTIME_ID) - t0 < sec)
        for (int k = 0; k < 200000; k++, i++) {
            sink += i * 0.5;
            if (i % 20000 == 0)
                getppid();
        }
}

static const char *within(double x, double lo, double hi) { return x >= lo && x <= hi ? "ok" : "OUT OF BOUNDS"; }

static double thread_cpu[2];
static void *worker(void *a) {
    double t0 = clk(CLOCK_THREAD_CPUTIME_ID);
    busy(0.2);
    thread_cpu[(long)a] = clk(CLOCK_THREAD_CPUTIME_ID) - t0;
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 2 && !strcmp(argv[1], "exec")) {
        /* After exec: the process's CPU time so far is kept. */
        double before = atof(argv[2]), p = clk(CLOCK_PROCESS_CPUTIME_ID);
        fprintf(stderr, "after exec: process clock %.3f, %.3f before\n", p, before);
        printf("exec keeps the process clock: %s\n", p >= before ? "ok" : "LOST");
        return 0;
    }
    /* One busy thread making calls. */
    double p0 = clk(CLOCK_PROCESS_CPUTIME_ID), t0 = clk(CLOCK_THREAD_CPUTIME_ID);
    double r0 = usage_self(), m0 = times_self();
    busy(0.4);
    double p1 = clk(CLOCK_PROCESS_CPUTIME_ID), t1 = clk(CLOCK_THREAD_CPUTIME_ID);
    double r1 = usage_self(), m1 = times_self();
    double thr = t1 - t0;
    fprintf(stderr, "one thread: thread %.3f process %.3f rusage %.3f times %.2f\n", thr, p1 - p0, r1 - r0, m1 - m0);
    printf("process clock / thread clock: %s\n", within((p1 - p0) / thr, 0.9, 1.1));
    printf("getrusage(RUSAGE_SELF) / thread clock: %s\n", within((r1 - r0) / thr, 0.9, 1.1));
    printf("times() / thread clock: %s\n", within((m1 - m0) / thr, 0.85, 1.15));

    /* The clock ids clock_getcpuclockid makes for pid 0 and for the own pid read the same clock. */
    clockid_t c0, cs;
    int e0 = clock_getcpuclockid(0, &c0), es = clock_getcpuclockid(getpid(), &cs);
    double a = clk(CLOCK_PROCESS_CPUTIME_ID), b = clk(c0), c = clk(cs), d = clk(CLOCK_PROCESS_CPUTIME_ID);
    fprintf(stderr, "clock ids: %.6f <= %.6f <= %.6f <= %.6f\n", a, b, c, d);
    printf("own pid clocks: %s\n", !e0 && !es && a <= b && b <= c && c <= d ? "ok" : "DIFFER");

    /* A sleep right after the busy phase: the process clock stays (natively it grows by 0). */
    double sp0 = clk(CLOCK_PROCESS_CPUTIME_ID), st0 = clk(CLOCK_THREAD_CPUTIME_ID);
    struct timespec sl = {0, 40000000};
    nanosleep(&sl, 0);
    double sp = clk(CLOCK_PROCESS_CPUTIME_ID) - sp0, st = clk(CLOCK_THREAD_CPUTIME_ID) - st0;
    fprintf(stderr, "40 ms sleep: process clock +%.4f, thread clock +%.4f\n", sp, st);
    printf("a sleep adds nothing to the process clock: %s\n", sp - st < 0.002 ? "ok" : "IT GREW");

    /* Two busy threads: the process clock is their sum (and the main thread's little). */
    double q0 = clk(CLOCK_PROCESS_CPUTIME_ID), u0 = usage_self(), mt0 = clk(CLOCK_THREAD_CPUTIME_ID);
    pthread_t x, y;
    pthread_create(&x, 0, worker, (void *)0);
    pthread_create(&y, 0, worker, (void *)1);
    pthread_join(x, 0);
    pthread_join(y, 0);
    double q = clk(CLOCK_PROCESS_CPUTIME_ID) - q0, u = usage_self() - u0;
    double sum = thread_cpu[0] + thread_cpu[1] + clk(CLOCK_THREAD_CPUTIME_ID) - mt0;
    fprintf(stderr, "two threads: their clocks %.3f, process %.3f, rusage %.3f\n", sum, q, u);
    printf("two threads' process clock: %s\n", within(q / sum, 0.9, 1.1));
    printf("two threads' getrusage: %s\n", within(u / sum, 0.9, 1.1));

    /* A forked child's clock starts near 0 and counts its own work. */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        double f0 = clk(CLOCK_PROCESS_CPUTIME_ID), ft0 = clk(CLOCK_THREAD_CPUTIME_ID);
        busy(0.2);
        double f = clk(CLOCK_PROCESS_CPUTIME_ID) - f0, ft = clk(CLOCK_THREAD_CPUTIME_ID) - ft0;
        fprintf(stderr, "child: starts at %.4f, thread %.3f process %.3f rusage %.3f\n", f0, ft, f, usage_self());
        printf("child's clock starts near 0: %s\n", f0 < 0.05 ? "ok" : "INHERITED");
        printf("child's process clock / thread clock: %s\n", within(f / ft, 0.9, 1.1));
        fflush(stdout);
        _exit(0);
    }
    int st_;
    waitpid(pid, &st_, 0);

    /* "noexec" (the emulator's test, crates/emulate/tests/issue_15_own_cpu_time.rs): stop here. */
    if (argc > 1 && !strcmp(argv[1], "noexec"))
        return 0;

    /* exec keeps the process's CPU time. */
    char before[32];
    snprintf(before, sizeof before, "%.6f", clk(CLOCK_PROCESS_CPUTIME_ID));
    fflush(stdout);
    execl("/proc/self/exe", argv[0], "exec", before, (char *)0);
    perror("execl /proc/self/exe");
    return 1;
}
