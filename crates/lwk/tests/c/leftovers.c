/* Issue #14: a guest that faults, is killed or runs out of memory leaves nothing behind. Before it
 * ends, the program holds what a dying process may leave: two SysV shared-memory segments
 * attached (one already marked for removal, which must go when the process does; one not, which
 * must stay, as on Linux), a temporary file made with mkstemp and unlinked, and one made with
 * tmpfile(). It prints "ready <id removed> <id kept>", then ends by its mode:
 *   fault  — a write through a NULL pointer (SIGSEGV);
 *   wait   — waits for a signal from outside (SIGKILL or SIGTERM, sent by the test);
 *   oom    — allocates and touches 8 MiB blocks until malloc fails, says so, and aborts (SIGABRT);
 *   child  — forks a child that sleeps (an orphan natively too), then waits for a signal;
 *   thread-abort — a second thread calls abort() while the main thread waits to join it (the
 *            LWK used to wait forever: nothing kicked the main thread out of its futex wait). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <unistd.h>

static int segment(int remove) {
    int id = shmget(IPC_PRIVATE, 1 << 20, IPC_CREAT | 0600);
    if (id < 0) {
        perror("shmget");
        exit(2);
    }
    char *p = shmat(id, NULL, 0);
    if (p == (void *)-1) {
        perror("shmat");
        exit(2);
    }
    memset(p, 1, 1 << 20);
    if (remove)
        shmctl(id, IPC_RMID, NULL);
    return id;
}

static void *aborter(void *arg) {
    (void)arg;
    usleep(100000);
    abort();
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "fault";
    setvbuf(stdout, NULL, _IONBF, 0);
    int gone = segment(1), kept = segment(0);
    char name[4096];
    snprintf(name, sizeof name, "%s/leftover-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    int fd = mkstemp(name);
    if (fd < 0 || unlink(name) != 0 || write(fd, "x", 1) != 1) {
        perror("mkstemp");
        return 2;
    }
    FILE *t = tmpfile();
    if (!t || fputs("y", t) < 0) {
        perror("tmpfile");
        return 2;
    }
    if (strcmp(mode, "child") == 0) {
        if (fork() == 0) {
            sleep(60);
            _exit(0);
        }
    }
    printf("ready %d %d\n", gone, kept);
    if (strcmp(mode, "fault") == 0) {
        volatile int *null = NULL;
        *null = 1;
    } else if (strcmp(mode, "thread-abort") == 0) {
        pthread_t t;
        pthread_create(&t, NULL, aborter, NULL);
        pthread_join(t, NULL);
    } else if (strcmp(mode, "oom") == 0) {
        size_t mib = 0;
        for (;;) {
            char *b = malloc(8 << 20);
            if (!b)
                break;
            memset(b, 7, 8 << 20);
            mib += 8;
        }
        printf("out of memory after more than %s\n", mib >= 64 ? "64 MiB" : "nothing");
        abort();
    }
    for (;;)
        pause();
}
