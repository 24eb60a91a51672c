/* Stop signals at their default action (reported 2026-11-28): a guest that raised SIGSTOP on
 * itself ended with status 147 once continued, and SIGTSTP, SIGTTIN and SIGTTOU did nothing.
 * For each of SIGSTOP and SIGTSTP a child raises it on itself; the parent reports what waitpid
 * (WUNTRACED) sees, continues a stopped child and reports how it ended. The output is compared
 * with the native run's (whether SIGTSTP stops depends on the process group: the kernel does not
 * stop an orphaned one for it). With "wait": prints "ready", sleeps 0.6 s and prints "done" (the
 * test stops it from outside with SIGTSTP, as Ctrl-Z would, and continues it). */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc > 1) {
        printf("ready\n");
        fflush(stdout);
        usleep(600000);
        printf("done\n");
        return 0;
    }
    int sigs[] = {SIGSTOP, SIGTSTP};
    for (int k = 0; k < 2; k++) {
        fflush(stdout);
        pid_t c = fork();
        if (c == 0) {
            raise(sigs[k]);
            printf("child %d: resumed\n", sigs[k]);
            fflush(stdout);
            _exit(7);
        }
        int st;
        if (waitpid(c, &st, WUNTRACED) != c)
            return 2;
        if (WIFSTOPPED(st)) {
            printf("signal %d: stopped by %d\n", sigs[k], WSTOPSIG(st));
            fflush(stdout);
            kill(c, SIGCONT);
            if (waitpid(c, &st, 0) != c)
                return 3;
        }
        if (WIFEXITED(st))
            printf("signal %d: exited %d\n", sigs[k], WEXITSTATUS(st));
        else
            printf("signal %d: killed by %d\n", sigs[k], WTERMSIG(st));
    }
    return 0;
}
