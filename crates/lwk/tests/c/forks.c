/* Processes in the LWK: fork (the child changes memory the parent must not see, and exits with a
 * code), fork + exec, a child killed by a signal, system() (posix_spawn: clone(CLONE_VM|CLONE_VFORK)),
 * and popen. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int shared_value = 1;

int main(void) {
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        shared_value = 2;
        printf("child: value %d, parent is the caller %d\n", shared_value, getppid() > 0);
        fflush(stdout);
        _exit(3);
    }
    int st = 0;
    waitpid(c, &st, 0);
    printf("parent: child exited %d with %d, my value still %d\n", WIFEXITED(st), WEXITSTATUS(st), shared_value);

    fflush(stdout);
    c = fork();
    if (c == 0) {
        execl("/bin/echo", "echo", "exec'd in a child", (char *)NULL);
        _exit(127);
    }
    waitpid(c, &st, 0);
    printf("fork+exec: status %d\n", WEXITSTATUS(st));

    fflush(stdout);
    c = fork();
    if (c == 0) {
        raise(SIGTERM);
        _exit(0);
    }
    waitpid(c, &st, 0);
    printf("killed child: signalled %d by %d\n", WIFSIGNALED(st), WTERMSIG(st));

    fflush(stdout);
    int r = system("echo from system; exit 5");
    printf("system: %d\n", WEXITSTATUS(r));

    FILE *p = popen("echo through a pipe | tr a-z A-Z", "r");
    char line[64] = {0};
    if (p && fgets(line, sizeof line, p)) printf("popen: %s", line);
    if (p) printf("pclose: %d\n", WEXITSTATUS(pclose(p)));
    return 0;
}
