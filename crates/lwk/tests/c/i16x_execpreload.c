/* Issue #16: a guest execs PROG (a --linux-exec program: `orted`) with LD_PRELOAD=LIB in the
 * environment it passes; the program runs on Linux with the VMM's loader variables, not the
 * guest's, so LIB is not loaded into it. `i16x_execpreload LIB PROG ARGS...` */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc < 3) return 2;
    char env[4096];
    snprintf(env, sizeof env, "LD_PRELOAD=%s", argv[1]);
    char *envp[] = {env, "PATH=/usr/bin:/bin", NULL};
    pid_t c = fork();
    if (c == 0) {
        execve(argv[2], argv + 2, envp);
        perror("execve");
        _exit(127);
    }
    int st;
    waitpid(c, &st, 0);
    printf("exec'd %s\n", argv[2]);
    return 0;
}
