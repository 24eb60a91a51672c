/* Issue #13: a program whose forwarded calls a trace must count and attribute. emit_lines()
 * writes N lines with write(2) (delegated under every policy); probe_files() stats a missing
 * path M times. A fork()ed child writes once more, into its own trace. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) void emit_lines(int n) {
    for (int i = 0; i < n; i++) {
        char line[32];
        int len = snprintf(line, sizeof line, "line %d\n", i);
        if (write(1, line, len) != len) exit(3);
    }
}

__attribute__((noinline)) int probe_files(int m) {
    struct stat st;
    int missing = 0;
    for (int i = 0; i < m; i++) missing += stat("/nonexistent/multios-issue-13", &st) != 0;
    return missing;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 10, m = argc > 2 ? atoi(argv[2]) : 5;
    emit_lines(n);
    printf("missing %d\n", probe_files(m));
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        emit_lines(1);
        _exit(0);
    }
    int status = 0;
    waitpid(c, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
