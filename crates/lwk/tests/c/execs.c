/* execve in the LWK: `execs N` re-executes itself N times (through a close-on-exec fd, a handled
 * signal that must be reset, and the environment), then runs /bin/echo through execvp, or, with
 * `execs script PATH`, a #! script. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void on_usr1(int s) { (void)s; }

int main(int argc, char **argv) {
    if (argc > 2 && strcmp(argv[1], "script") == 0) {
        char *args[] = {argv[2], "from", "a", "script", NULL};
        execv(argv[2], args);
        printf("execv script failed: %s\n", strerror(errno));
        return 1;
    }
    int n = argc > 1 ? atoi(argv[1]) : 3;
    const char *gen = getenv("EXEC_GEN");
    int g = gen ? atoi(gen) : 0;
    struct sigaction sa;
    sigaction(SIGUSR1, NULL, &sa);
    int cloexec_open = fcntl(9, F_GETFD) != -1;
    printf("generation %d of %d: USR1 %s, fd 9 %s\n", g, n, sa.sa_handler == SIG_DFL ? "default" : "handled",
           cloexec_open ? "open" : "closed");
    fflush(stdout);
    if (g < n) {
        signal(SIGUSR1, on_usr1);
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        dup3(fd, 9, O_CLOEXEC);
        char next[16];
        snprintf(next, sizeof next, "%d", g + 1);
        setenv("EXEC_GEN", next, 1);
        char *args[] = {argv[0], argv[1] ? argv[1] : "3", NULL};
        execv("/proc/self/exe", args);
        printf("execv failed: %s\n", strerror(errno));
        return 1;
    }
    errno = 0;
    execl("/nonexistent/prog", "x", (char *)NULL);
    printf("missing program: %s\n", strerror(errno));
    fflush(stdout);
    execlp("echo", "echo", "echo ran after", argv[1] ? argv[1] : "3", "execs", (char *)NULL);
    printf("execlp failed: %s\n", strerror(errno));
    return 1;
}
