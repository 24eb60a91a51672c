/* Issue #16: a program started where /proc is not procfs (unmounted, or a tmpfs a root guest
 * filled with a `self/…` of its own). It opens files, forks, and execs itself with a
 * close-on-exec descriptor, which must be closed after the exec. Natively and in the LWK: same
 * output. Before the fix every open in the LWK failed with EACCES (a dynamic build died loading
 * libc). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *res(long r) { return r < 0 ? strerror(errno) : "ok"; }

int main(int argc, char **argv) {
    if (argc > 1) {
        int fd = atoi(argv[1]);
        printf("after exec: fd %s\n", fcntl(fd, F_GETFD) < 0 ? strerror(errno) : "still open");
        return 0;
    }
    int fd = open(argv[0], O_RDONLY | O_CLOEXEC);
    printf("open of the program: %s\n", res(fd));
    char magic[4] = {0};
    printf("read: %s\n", read(fd, magic, 4) == 4 && memcmp(magic, "\177ELF", 4) == 0 ? "ELF" : "?");
    long p = open("/proc/self/status", O_RDONLY | O_NONBLOCK);
    printf("open /proc/self/status: %s\n", res(p));
    struct stat st;
    printf("stat /etc/passwd: %s\n", res(stat("/etc/passwd", &st)));
    int d = openat(AT_FDCWD, "/", O_RDONLY | O_DIRECTORY);
    printf("open /: %s\n", res(d));
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        printf("child: open of the program %s\n", res(open(argv[0], O_RDONLY)));
        fflush(stdout);
        _exit(3);
    }
    int status = 0;
    waitpid(c, &status, 0);
    printf("child exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    char num[16];
    snprintf(num, sizeof num, "%d", fd);
    fflush(stdout);
    execl(argv[0], argv[0], num, (char *)NULL);
    printf("execl: %s\n", strerror(errno));
    return 1;
}
