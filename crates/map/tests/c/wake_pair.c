/* Issue #12: a parent wakes its child ROUNDS times through a pipe. Before each one-byte write
 * the parent waits until /proc says the child is asleep ('S': it does nothing but read(2)), so
 * each write is exactly one wake-up of the child by the parent (sched_wakeup, waker = parent).
 * A fixed nap was not enough on a loaded CI machine: once in a while the child had not yet
 * gone back to sleep and a write woke nobody (99 of 100). Prints "parent PID" and "child PID"
 * on stderr. Usage: wake_pair ROUNDS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The state letter of /proc/PID/stat (after the command's closing parenthesis), or '?'. */
static char state_of(pid_t pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return '?';
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *close_paren = strrchr(buf, ')');
    return close_paren && close_paren[1] == ' ' ? close_paren[2] : '?';
}

/* Waits (up to 10 s) until the child sleeps; 1 when it does. */
static int wait_asleep(pid_t pid) {
    struct timespec tick = {0, 100 * 1000};
    for (int i = 0; i < 100000; i++) {
        if (state_of(pid) == 'S')
            return 1;
        nanosleep(&tick, NULL);
    }
    return 0;
}

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
    for (int i = 0; i < rounds; i++) {
        if (!wait_asleep(child)) {
            fprintf(stderr, "child %d never went to sleep in read\n", (int)child);
            return 5;
        }
        if (write(fds[1], "x", 1) != 1)
            return 3;
    }
    int st;
    if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return 4;
    return 0;
}
