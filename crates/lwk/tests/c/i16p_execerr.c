/* Issue #16: execve's errnos for over-long strings and paths (EFAULT in the LWK, Linux gives
 * E2BIG and ENAMETOOLONG) and the largest argument list under the current RLIMIT_STACK. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* execve of /bin/true with n arguments of len bytes and one environment string of elen bytes in
 * a child: 0 when it ran, else the errno. */
static int try_exec(const char *path, long n, long len, long elen) {
    char *s = malloc(len + 1), *e = malloc(elen + 3);
    memset(s, 'x', len); s[len] = 0;
    strcpy(e, "E="); memset(e + 2, 'y', elen); e[elen + 2] = 0;
    char **a = malloc((n + 2) * sizeof(char *));
    a[0] = "true";
    for (long i = 1; i <= n; i++) a[i] = s;
    a[n + 1] = 0;
    char *env[] = {e, 0};
    fflush(stdout);
    pid_t p = vfork();
    if (p == 0) { execve(path, a, env); _exit(100 + errno); }
    int st;
    waitpid(p, &st, 0);
    free(s); free(e); free(a);
    return WIFEXITED(st) && WEXITSTATUS(st) >= 100 ? WEXITSTATUS(st) - 100 : 0;
}

int main(void) {
    printf("arg 131071: %d\n", try_exec("/bin/true", 1, 131071, 1));
    printf("arg 131072: %d\n", try_exec("/bin/true", 1, 131072, 1));
    printf("env 131069: %d\n", try_exec("/bin/true", 0, 0, 131069));
    printf("env 131070: %d\n", try_exec("/bin/true", 0, 0, 131070));
    /* A path of 4096 bytes without its NUL; one of 4095 made of short components. */
    char p[4097];
    memset(p, 'a', 4096); p[0] = '/'; p[4096] = 0;
    printf("path 4096: %d\n", try_exec(p, 0, 0, 1));
    for (int i = 0; i < 4095; i++) p[i] = i % 2 ? 'a' : '/';
    p[4095] = 0;
    printf("path 4095: %d\n", try_exec(p, 0, 0, 1));
    printf("bad path: %d\n", try_exec((char *)8, 0, 0, 1));
    /* The most 1000-byte arguments that fit (bisection). */
    long lo = 0, hi = 1 << 14;
    while (lo + 1 < hi) {
        long mid = (lo + hi) / 2;
        if (try_exec("/bin/true", mid, 1000, 1) == 0) lo = mid; else hi = mid;
    }
    printf("most 1000-byte args: %ld (then errno %d)\n", lo, try_exec("/bin/true", hi, 1000, 1));
    return 0;
}
