/* Regressions of split execution (issue #13): several threads' first hrt_call at once (each used
   to start the same vCPU id: KVM_CREATE_VCPU EEXIST), hrt_call/hrt_invoke_func made by a
   function running in the guest (used to wait forever for a vCPU), and the ids the guest sees
   after the program changed them (getuid/geteuid/getppid used to be cached at hrt_init).
   Prints "ok - ..." / "not ok - ..." lines. argv[1]: "race", "nested", "ids". */
#define _GNU_SOURCE
#include <multios/hrt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int fails;
#define CHECK(c, ...) do { int c_ = (c); printf("%s - ", c_ ? "ok" : "not ok"); printf(__VA_ARGS__); printf("\n"); fflush(stdout); if (!c_) fails++; } while (0)

static long inc(void *a) { return (long)a + 1; }

#define N 6
static pthread_barrier_t bar;
static int errs[N];
static long rets[N];
static void *first_call(void *a) {
    long i = (long)a;
    pthread_barrier_wait(&bar);
    errs[i] = hrt_call(inc, a, &rets[i]);
    return NULL;
}

static int race(void) {
    for (int round = 0; round < 5; round++) {
        struct hrt_config c = { .max_vcpus = round % 2 ? 2 : 8, .first_cpu = -1, .keep_affinity = 1 };
        if (hrt_init(&c)) return 100;
        pthread_t t[N];
        pthread_barrier_init(&bar, NULL, N);
        for (long i = 0; i < N; i++) pthread_create(&t[i], NULL, first_call, (void *)i);
        int bad = 0;
        for (int i = 0; i < N; i++) {
            pthread_join(t[i], NULL);
            if (errs[i] != 0 || rets[i] != i + 1) {
                bad++;
                printf("# round %d thread %d: %d (%s) r=%ld\n", round, i, errs[i], hrt_strerror(errs[i]), rets[i]);
            }
        }
        pthread_barrier_destroy(&bar);
        CHECK(bad == 0, "round %d (max_vcpus %u): %d first calls at once all succeed", round, c.max_vcpus, N);
        hrt_fini();
    }
    return fails;
}

static long add1(void *a) { long *p = a; *p += 1; return *p; }
static long nested_call(void *a) { long x = 1, r = 0; int e = hrt_call(add1, &x, &r); ((long *)a)[0] = e; ((long *)a)[1] = x; return r; }
static long nested_invoke(void *a) { (void)a; hrt_thread_t t; return hrt_invoke_func(add1, a, &t); }

static int nested(void) {
    struct hrt_config c = { .max_vcpus = 1, .first_cpu = -1, .keep_affinity = 1 };
    if (hrt_init(&c)) return 100;
    long o[2] = { -1, -1 }, r = 0;
    alarm(20); /* the old deadlock: fail rather than hang */
    int e = hrt_call(nested_call, o, &r);
    CHECK(e == 0 && o[0] == 0 && o[1] == 2 && r == 2, "hrt_call inside a function (max_vcpus 1) runs it: e=%d inner=%ld x=%ld r=%ld", e, o[0], o[1], r);
    long y = 5;
    e = hrt_call(nested_invoke, &y, &r);
    CHECK(e == 0 && r == HRT_ENESTED && y == 5, "hrt_invoke_func inside a function is HRT_ENESTED: e=%d r=%ld y=%ld", e, r, y);
    CHECK(strstr(hrt_strerror(HRT_ENESTED), "inside") != NULL, "HRT_ENESTED has its message: %s", hrt_strerror(HRT_ENESTED));
    hrt_thread_t t;
    e = hrt_invoke_func(nested_call, o, &t);
    long v = 0;
    int j = e ? e : hrt_join(t, &v);
    CHECK(e == 0 && j == 0 && v == 2 && o[1] == 2, "hrt_call inside an invoked function: e=%d join=%d v=%ld", e, j, v);
    /* outside a function again: the vCPU is used as usual */
    e = hrt_call(inc, (void *)41, &r);
    CHECK(e == 0 && r == 42, "a call after the nested ones: e=%d r=%ld", e, r);
    hrt_fini();
    return fails;
}

static long ids(void *a) { long *o = a; o[0] = getuid(); o[1] = geteuid(); o[2] = getppid(); o[3] = getgid(); return 0; }
static long own_setuid(void *a) { (void)a; if (setresuid(65534, 65534, 0) != 0) return -1; return (long)getuid() * 100000 + (long)geteuid(); }

static int idsp(void) {
    int p[2], ready[2];
    if (pipe(p) || pipe(ready)) return 100;
    pid_t c = fork();
    if (c == 0) {
        pid_t g = fork();
        if (g == 0) {
            /* the grandchild: its runtime starts while its parent lives */
            close(p[0]); close(ready[0]);
            struct hrt_config cf = { .first_cpu = -1, .keep_affinity = 1 };
            if (hrt_init(&cf)) _exit(100);
            long o[4];
            hrt_call(ids, o, NULL);
            long before = o[2];
            if (write(ready[1], "r", 1) != 1) _exit(101);
            for (int k = 0; k < 2000 && getppid() == before; k++) usleep(5000);
            hrt_call(ids, o, NULL);
            char m[200];
            int n = snprintf(m, sizeof m, "%s - getppid in the guest follows the parent's death: %ld (native %d, at init %ld)\n",
                             o[2] == getppid() && o[2] != before ? "ok" : "not ok", o[2], getppid(), before);
            if (write(p[1], m, n) != n) _exit(102);
            hrt_fini();
            _exit(0);
        }
        char b;
        if (read(ready[0], &b, 1) != 1) _exit(1);
        _exit(0);
    }
    close(p[1]); close(ready[1]);
    int st;
    waitpid(c, &st, 0);
    char m[256] = { 0 };
    ssize_t n = read(p[0], m, sizeof m - 1);
    if (n > 0) { fputs(m, stdout); if (strncmp(m, "ok", 2)) fails++; } else CHECK(0, "the grandchild reported");
    fflush(stdout);

    struct hrt_config cf = { .first_cpu = -1, .keep_affinity = 1 };
    if (hrt_init(&cf)) return 100;
    long o[4];
    hrt_call(ids, o, NULL);
    CHECK(o[0] == (long)getuid() && o[1] == (long)geteuid() && o[2] == getppid() && o[3] == (long)getgid(), "ids at first: %ld %ld %ld %ld", o[0], o[1], o[2], o[3]);
    if (getuid() != 0) {
        printf("ok - # skip: the credential checks need root\n");
        return fails;
    }
    if (setresuid(65534, 65534, 0)) { perror("setresuid"); return 100; }
    hrt_call(ids, o, NULL);
    CHECK(o[0] == 65534 && o[1] == 65534, "getuid/geteuid in the guest after the program's setresuid: %ld %ld", o[0], o[1]);
    if (setresuid(0, 0, 0)) { perror("setresuid back"); return 100; }
    hrt_call(ids, o, NULL);
    CHECK(o[0] == 0 && o[1] == 0, "and after it set them back: %ld %ld", o[0], o[1]);
    long r = 0;
    alarm(20);
    int e = hrt_call(own_setuid, NULL, &r);
    CHECK(e == 0 && r == 65534L * 100000 + 65534, "getuid/geteuid in the guest after its own setresuid: e=%d %ld", e, r);
    CHECK(getuid() == 65534 && geteuid() == 65534, "the function's setresuid changed the process's ids: %d %d", getuid(), geteuid());
    hrt_fini();
    return fails;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    if (!strcmp(argv[1], "race")) return race();
    if (!strcmp(argv[1], "nested")) return nested();
    if (!strcmp(argv[1], "ids")) return idsp();
    return 2;
}
