/* Issue #16 (stress-ng's msg, sem-sysv, sync-file, readahead and utime stressors): System V
 * message queues and semaphores between a parent and its child, a blocked msgrcv interrupted by
 * a handler (EINTR, never restarted), and sync_file_range, readahead, utime and utimes on a file.
 * Prints lines that must be the same natively and in the LWK. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utime.h>

struct msg {
    long type;
    char text[16];
};
union semun {
    int val;
    struct semid_ds *buf;
    unsigned short *array;
};
static void on_alarm(int s) { (void)s; }

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    int q = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
    int sem = semget(IPC_PRIVATE, 2, IPC_CREAT | 0600);
    unsigned short init[2] = {1, 0};
    printf("msgget %s, semget %s, SETALL %d\n", q >= 0 ? "ok" : strerror(errno), sem >= 0 ? "ok" : strerror(errno),
           semctl(sem, 0, SETALL, (union semun){.array = init}));
    pid_t c = fork();
    if (c == 0) {
        for (long t = 1; t <= 3; t++) {
            struct msg m = {.type = t};
            snprintf(m.text, sizeof m.text, "message %ld", t);
            msgsnd(q, &m, sizeof m.text, 0);
        }
        struct sembuf v = {1, 1, 0}; /* V on semaphore 1: lets the parent go */
        usleep(100000);
        semop(sem, &v, 1);
        _exit(0);
    }
    struct sembuf p = {1, -1, 0}; /* waits for the child's V, after its three messages */
    printf("semop waiting for the child: %d\n", semop(sem, &p, 1));
    struct msg m;
    ssize_t n = msgrcv(q, &m, sizeof m.text, 2, 0);
    printf("msgrcv type 2: %zd '%s'\n", n, m.text);
    n = msgrcv(q, &m, sizeof m.text, 0, 0);
    printf("msgrcv any: %zd '%s'\n", n, m.text);
    struct msqid_ds ds;
    msgctl(q, IPC_STAT, &ds);
    printf("left in the queue: %lu\n", (unsigned long)ds.msg_qnum);
    unsigned short vals[2];
    semctl(sem, 0, GETALL, (union semun){.array = vals});
    struct semid_ds sds;
    semctl(sem, 0, IPC_STAT, (union semun){.buf = &sds});
    printf("GETALL %u %u, nsems %lu, GETPID: %s\n", vals[0], vals[1], (unsigned long)sds.sem_nsems,
           semctl(sem, 1, GETPID) == getpid() ? "no, the parent (the last semop)" : "?");
    waitpid(c, NULL, 0);
    /* A blocked msgrcv and a handler without SA_RESTART: EINTR. */
    struct sigaction sa = {.sa_handler = on_alarm};
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {.it_value = {0, 200000}};
    setitimer(ITIMER_REAL, &it, NULL);
    n = msgrcv(q, &m, sizeof m.text, 99, 0);
    printf("msgrcv interrupted: %zd %s\n", n, n < 0 ? strerrorname_np(errno) : "");
    printf("IPC_RMID %d %d\n", msgctl(q, IPC_RMID, NULL), semctl(sem, 0, IPC_RMID));

    char path[] = "/tmp/multios-sysvipc-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, "data", 4) != 4)
        return 2;
    printf("sync_file_range %d, readahead %ld\n", (int)syscall(SYS_sync_file_range, fd, 0L, 4L, 2),
           (long)syscall(SYS_readahead, fd, 0L, 4096L));
    struct utimbuf ub = {.actime = 1000000000, .modtime = 1000000001};
    struct timeval tv[2] = {{1100000000, 0}, {1100000001, 0}};
    struct stat st;
    long r1 = syscall(SYS_utime, path, &ub);
    stat(path, &st);
    long m1 = (long)st.st_mtime;
    long r2 = syscall(SYS_utimes, path, tv);
    stat(path, &st);
    printf("utime %ld mtime %ld, utimes %ld mtime %ld\n", r1, m1, r2, (long)st.st_mtime);
    unlink(path);
    return 0;
}
