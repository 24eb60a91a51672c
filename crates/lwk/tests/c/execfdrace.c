/* Issue #15: a child that execs right after fork (or posix_spawn's vfork) keeps the files it
 * opens. In the LWK the forked VMM starts its signal pump beside the child's guest; the pump's
 * signalfd spent a moment at the lowest free fd, where the exec's close-on-exec sweep closed it
 * and the new program reopened that number, and the pump's close then took the program's file
 * (`as` lost libbfd in `make -j2`). Each exec'd child opens its own executable, waits 30 ms (long
 * enough for the test's widened window to end), and checks that its fd is still that file.
 * Usage: execfdrace SELF [child]. Prints "fork ok N/N" and "spawn ok N/N". */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;
#define ROUNDS 6

static int child(const char *self) {
    int fd = open(self, O_RDONLY);
    if (fd < 0) { perror("child open"); return 2; }
    struct timespec ts = {0, 30 * 1000 * 1000};
    nanosleep(&ts, 0);
    struct stat mine, theirs;
    if (fstat(fd, &mine) != 0) { perror("child fstat of its own fd after 30 ms"); return 3; }
    if (stat(self, &theirs) != 0) { perror("child stat"); return 4; }
    if (mine.st_ino != theirs.st_ino || mine.st_dev != theirs.st_dev) {
        fprintf(stderr, "child fd %d is no longer %s\n", fd, self);
        return 5;
    }
    return close(fd) == 0 ? 0 : 6;
}

static int ok(pid_t p) {
    int st;
    if (p < 0 || waitpid(p, &st, 0) != p) return 0;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: execfdrace SELF [child]\n"); return 2; }
    if (argc > 2 && strcmp(argv[2], "child") == 0) return child(argv[1]);
    char *args[] = {argv[1], argv[1], "child", 0};
    int forked = 0, spawned = 0;
    for (int i = 0; i < ROUNDS; i++) {
        pid_t p = fork();
        if (p == 0) { execv(argv[1], args); _exit(127); }
        forked += ok(p);
    }
    for (int i = 0; i < ROUNDS; i++) {
        pid_t p;
        if (posix_spawn(&p, argv[1], 0, 0, args, environ) != 0) p = -1;
        spawned += ok(p);
    }
    printf("fork ok %d/%d\nspawn ok %d/%d\n", forked, ROUNDS, spawned, ROUNDS);
    return forked == ROUNDS && spawned == ROUNDS ? 0 : 1;
}
