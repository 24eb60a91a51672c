/* SysV shared memory: a segment attached twice (once read-only), written through one attachment
 * and read through the other, shared with a forked child (its inherited attachment and its own),
 * IPC_STAT's size and attach count, shmdt and its errors, IPC_RMID. Output must match native. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

static void stat_of(int id, const char *when) {
    struct shmid_ds ds;
    if (shmctl(id, IPC_STAT, &ds) != 0) {
        printf("%s: IPC_STAT %s\n", when, strerror(errno));
        return;
    }
    printf("%s: size %zu, attached %lu\n", when, ds.shm_segsz, (unsigned long)ds.shm_nattch);
}

int main(void) {
    setvbuf(stdout, 0, _IONBF, 0);
    int id = shmget(IPC_PRIVATE, 10000, IPC_CREAT | 0600);
    if (id < 0) {
        printf("shmget: %s\n", strerror(errno));
        return 1;
    }
    char *p = shmat(id, 0, 0);
    if (p == (void *)-1) {
        printf("shmat: %s\n", strerror(errno));
        return 1;
    }
    strcpy(p, "hello");
    stat_of(id, "after one shmat");
    char *r = shmat(id, 0, SHM_RDONLY);
    printf("read-only attachment sees: %s, same address %d\n", r, r == p);
    stat_of(id, "after two");

    pid_t c = fork();
    if (c == 0) {
        char *q = shmat(id, 0, 0);
        q[100] = 'X';
        p[200] = 'Y';
        _exit(0);
    }
    waitpid(c, 0, 0);
    printf("the child's stores: %c %c\n", p[100], r[200]);
    p[9999] = 'Z'; /* the last byte of the segment */
    printf("last byte: %c\n", r[9999]);

    printf("shmdt: %d", shmdt(r));
    printf(" %d", shmdt(p));
    int e = shmdt(p);
    printf(" again %d %s\n", e, strerror(errno));
    stat_of(id, "after shmdt");
    printf("bad id: %s\n", shmat(-1, 0, 0) == (void *)-1 ? strerror(errno) : "attached?");
    e = shmctl(id, IPC_STAT, (struct shmid_ds *)8);
    printf("IPC_STAT to a bad pointer: %d %s\n", e, strerror(errno));
    printf("IPC_RMID: %d\n", shmctl(id, IPC_RMID, 0));
    return 0;
}
