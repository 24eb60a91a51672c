/* Issue #16: RLIMIT_DATA is the guest's own. `i16x_rlimdata`: setrlimit(RLIMIT_DATA, 256 MiB),
 * read back three ways (getrlimit, prlimit64 on 0 and on getpid()), then what made the VMM abort
 * or fail: a sendmsg with a 512 KiB control buffer (natively ENOBUFS), four pthread_creates, a
 * 1 MiB malloc. Output identical natively and in the LWK.
 * `i16x_rlimdata parent`: a forked child lowers its parent's RLIMIT_DATA, AS, NOFILE and STACK
 * with prlimit64 (in the LWK the parent is a VMM: refused with EPERM), then the parent starts
 * threads and sends the big control buffer again. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static void *run(void *a) { return a; }

static void show(const char *how, int r, struct rlimit *l) {
    printf("%s = %d: soft %lu MiB, hard %s\n", how, r, (unsigned long)(l->rlim_cur >> 20),
           l->rlim_max == RLIM_INFINITY ? "unlimited" : "finite");
}

static void work(void) {
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    size_t n = 512 << 10;
    char *ctl = calloc(1, n), c = 'x';
    struct iovec io = {&c, 1};
    struct msghdr m = {0};
    m.msg_iov = &io;
    m.msg_iovlen = 1;
    m.msg_control = ctl;
    m.msg_controllen = n;
    long s = sendmsg(sv[0], &m, 0);
    printf("sendmsg(512 KiB control) = %ld (%s)\n", s, s < 0 ? strerror(errno) : "ok");
    for (int i = 0; i < 4; i++) {
        pthread_t t;
        int e = pthread_create(&t, NULL, run, NULL);
        printf("pthread_create %d = %d (%s)\n", i, e, strerror(e));
        if (!e) pthread_join(t, NULL);
    }
    void *big = malloc(1 << 20);
    printf("malloc(1 MiB) %s\n", big ? "ok" : "failed");
    free(big);
    free(ctl);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc > 1 && strcmp(argv[1], "parent") == 0) {
        pid_t parent = getpid(), c = fork();
        if (c == 0) {
            int res[] = {RLIMIT_DATA, RLIMIT_AS, RLIMIT_NOFILE, RLIMIT_STACK};
            const char *names[] = {"DATA", "AS", "NOFILE", "STACK"};
            for (int i = 0; i < 4; i++) {
                struct rlimit l = {1 << 20, 1 << 20};
                if (res[i] == RLIMIT_NOFILE) l.rlim_cur = l.rlim_max = 8;
                int r = prlimit(parent, res[i], &l, NULL);
                printf("child: prlimit(parent, RLIMIT_%s, small) = %d (%s)\n", names[i], r,
                       r ? strerror(errno) : "ok");
            }
            struct rlimit got;
            int r = prlimit(parent, RLIMIT_DATA, NULL, &got);
            printf("child: prlimit(parent, RLIMIT_DATA) read = %d\n", r);
            _exit(0);
        }
        int st;
        waitpid(c, &st, 0);
        work();
        printf("survived\n");
        return 0;
    }
    struct rlimit r = {256 << 20, 256 << 20}, got;
    printf("setrlimit(RLIMIT_DATA, 256 MiB) = %d\n", setrlimit(RLIMIT_DATA, &r));
    memset(&got, 0, sizeof got);
    show("getrlimit", getrlimit(RLIMIT_DATA, &got), &got);
    memset(&got, 0, sizeof got);
    show("prlimit(0)", prlimit(0, RLIMIT_DATA, NULL, &got), &got);
    memset(&got, 0, sizeof got);
    show("prlimit(getpid())", prlimit(getpid(), RLIMIT_DATA, NULL, &got), &got);
    struct rlimit up = {512 << 20, 512 << 20};
    int e = setrlimit(RLIMIT_DATA, &up);
    printf("raising the hard limit as %s: %d\n", geteuid() ? "a user" : "root", e ? errno == EPERM : 0);
    struct rlimit bad = {300 << 20, 200 << 20};
    e = setrlimit(RLIMIT_DATA, &bad);
    printf("soft > hard: %d (%s)\n", e, e ? strerror(errno) : "ok");
    setrlimit(RLIMIT_DATA, &r);
    work();
    pid_t c = fork();
    if (c == 0) {
        memset(&got, 0, sizeof got);
        show("child getrlimit", getrlimit(RLIMIT_DATA, &got), &got);
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    printf("survived\n");
    return 0;
}
