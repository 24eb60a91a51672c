/* Changes directory to argv[1], then forks twice: the children's trace files must land beside
   the parent's (LWK_TRACE given relative to the starting directory), not in argv[1]. */
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc > 1 && chdir(argv[1]) != 0) { perror("chdir"); return 1; }
    for (int k = 0; k < 2; k++) {
        pid_t c = fork();
        if (c == 0) {
            struct timespec s;
            clock_gettime(CLOCK_MONOTONIC, &s);
            _exit(0);
        }
        int st;
        waitpid(c, &st, 0);
    }
    printf("parent done\n");
    return 0;
}
