/* vfork's promises in the LWK (vfork.rs): the parent waits for the child's exec or exit and sees
 * what the child wrote just above its stack pointer. glibc's posix_spawn reports a failed exec
 * through that memory; in the LWK it returned 0 and a child exiting 127 where Linux returns
 * ENOENT. From the main thread and from a second thread (whose stack is an mmap). */
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void spawns(const char *who) {
    pid_t p;
    char *missing[] = {"x", 0};
    int r = posix_spawn(&p, "/nonexistent/x", 0, 0, missing, environ);
    printf("%s posix_spawn of a missing file: %s\n", who, r ? strerror(r) : "ok");
    r = posix_spawnp(&p, "no-such-program-anywhere", 0, 0, missing, environ);
    printf("%s posix_spawnp of a missing program: %s\n", who, r ? strerror(r) : "ok");
    char *yes[] = {"true", 0};
    int st = -1;
    r = posix_spawnp(&p, "true", 0, 0, yes, environ);
    if (r == 0)
        waitpid(p, &st, 0);
    printf("%s posix_spawnp true: %s, exit %d\n", who, r ? strerror(r) : "ok", WEXITSTATUS(st));
}

static void *thread(void *arg) {
    spawns((const char *)arg);
    return 0;
}

int main(void) {
    volatile int seen = 0;
    pid_t p = vfork();
    if (p == 0) {
        seen = 42;
        _exit(3);
    }
    int st;
    waitpid(p, &st, 0);
    printf("vfork child wrote %d, exit %d\n", seen, WEXITSTATUS(st));
    spawns("main");
    pthread_t t;
    pthread_create(&t, 0, thread, "thread");
    pthread_join(t, 0);
    return 0;
}
