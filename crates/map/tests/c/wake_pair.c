/* Issue #12: a parent wakes its child ROUNDS times through a pipe. The parent sleeps 2 ms
 * before each one-byte write, so the child is asleep in read(2) every time and each write is
 * exactly one wake-up of the child by the parent (sched_wakeup, waker = parent). Prints
 * "parent PID" and "child PID" on stderr. Usage: wake_pair ROUNDS */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 50;
    int fds[2];
    if (pipe(fds) != 0) {
        perror("pipe");
        return 1;
    }
    pid_t child = fork();
    if (child < 0) {
        perror("fork");
        return 1;
    }
    if (child == 0) {
        char c;
        close(fds[1]);
        for (int i = 0; i < rounds; i++)
            if (read(fds[0], &c, 1) != 1)
                return 2;
        return 0;
    }
    close(fds[0]);
    fprintf(stderr, "parent %d\nchild %d\n", (int)getpid(), (int)child);
    struct timespec nap = {0, 2 * 1000 * 1000};
    for (int i = 0; i < rounds; i++) {
        nanosleep(&nap, NULL);
        if (write(fds[1], "x", 1) != 1)
            return 3;
    }
    int st;
    if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return 4;
    return 0;
}
