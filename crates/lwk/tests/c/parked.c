/* Issue #13: calls made after the LWK's proxy thread has parked (it parks after ~1 ms without
 * calls and then tells the stubs to ring the doorbell at once). Each round sleeps long enough for
 * the proxy to park, then makes a burst of delegated calls (getppid, a pipe write and read) from
 * two threads, and a forked child does the same. The results are checked here; the output is the
 * same natively and in the LWK. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 12
#define BURST 50

static pid_t parent;

static void nap(long us) {
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

/* Returns the number of wrong results over ROUNDS rounds. */
static long rounds(int tag) {
    long wrong = 0;
    int p[2];
    if (pipe(p) != 0) return -1;
    for (int r = 0; r < ROUNDS; r++) {
        nap(3000 + 500 * tag);
        for (int i = 0; i < BURST; i++) {
            if (getppid() != parent) wrong++;
            unsigned char b = (unsigned char)(r * BURST + i), c = 0;
            if (write(p[1], &b, 1) != 1 || read(p[0], &c, 1) != 1 || c != b) wrong++;
        }
    }
    close(p[0]);
    close(p[1]);
    return wrong;
}

static void *worker(void *arg) {
    return (void *)rounds((int)(long)arg);
}

int main(void) {
    parent = getppid();
    pthread_t t;
    if (pthread_create(&t, NULL, worker, (void *)1L) != 0) return 2;
    long mine = rounds(0);
    void *theirs;
    pthread_join(t, &theirs);
    printf("threads: %d rounds of %d calls each, wrong results %ld and %ld\n", ROUNDS, 2 * BURST,
           mine, (long)theirs);
    fflush(stdout);
    pid_t me = getpid();
    pid_t c = fork();
    if (c == 0) {
        parent = me;
        long w = rounds(2);
        printf("child: wrong results %ld\n", w);
        fflush(stdout);
        _exit(w == 0 ? 0 : 1);
    }
    int st = 0;
    if (waitpid(c, &st, 0) != c) return 3;
    printf("child exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    return 0;
}
