/* fork and system() from a multi-threaded process: with two workers parked on a condition
 * variable, the main thread forks (the child sees only itself, changes a value the parent keeps,
 * and can start its own thread); then a worker forks, and its child calls pthread_self-level
 * things (its TLS value, getpid == gettid) and exits with a code; a worker runs system(); then the
 * workers are released and joined. Output must match native. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int go, value = 1;
static __thread int tls = 10;

static void *idle(void *arg) {
    (void)arg;
    pthread_mutex_lock(&mu);
    while (!go)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return 0;
}

static void *child_thread(void *arg) {
    (void)arg;
    value += 100;
    return 0;
}

static void *forker(void *arg) {
    (void)arg;
    tls = 42;
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        printf("worker's child: tls %d, pid == tid %d\n", tls, getpid() == (pid_t)syscall(SYS_gettid));
        fflush(stdout);
        _exit(7);
    }
    int st;
    waitpid(c, &st, 0);
    printf("worker: child exited %d with %d\n", WIFEXITED(st), WEXITSTATUS(st));
    int r = system("echo from system in a worker");
    printf("worker: system returned %d\n", r);
    return 0;
}

int main(void) {
    pthread_t w[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&w[i], 0, idle, 0);
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        value = 2;
        pthread_t t;
        pthread_create(&t, 0, child_thread, 0);
        pthread_join(t, 0);
        printf("main's child: value %d\n", value);
        fflush(stdout);
        exit(3);
    }
    int st;
    waitpid(c, &st, 0);
    printf("main: child exited %d with %d, my value still %d\n", WIFEXITED(st), WEXITSTATUS(st), value);

    pthread_t f;
    pthread_create(&f, 0, forker, 0);
    pthread_join(f, 0);

    pthread_mutex_lock(&mu);
    go = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < 2; i++)
        pthread_join(w[i], 0);
    printf("main: workers joined, tls %d\n", tls);
    return 0;
}
