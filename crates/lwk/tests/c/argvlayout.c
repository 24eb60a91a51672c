/* Issue #16: the argument and environment strings as execve leaves them on Linux: argv[0] lowest,
 * each string right after the previous one, the environment right after the arguments (what
 * setproctitle-style code relies on when it rewrites argv[0] in place), and the task named
 * after the program (/proc/self/comm). */
#include <stdio.h>
#include <string.h>
extern char **environ;
int main(int argc, char **argv) {
    int ok = 1;
    for (int i = 0; i + 1 < argc; i++)
        ok &= argv[i + 1] == argv[i] + strlen(argv[i]) + 1;
    if (environ[0])
        ok &= environ[0] == argv[argc - 1] + strlen(argv[argc - 1]) + 1;
    for (int i = 0; environ[i] && environ[i + 1]; i++)
        ok &= environ[i + 1] == environ[i] + strlen(environ[i]) + 1;
    char comm[32] = "";
    FILE *f = fopen("/proc/self/comm", "r");
    if (f && fgets(comm, sizeof comm, f))
        comm[strcspn(comm, "\n")] = 0;
    printf("strings laid out as Linux: %s\ncomm: %s\n", ok ? "yes" : "no", comm);
    return 0;
}
