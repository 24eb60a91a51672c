/* Issue #16: a path with no NUL in its first 4096 bytes is ENAMETOOLONG for every call that takes
 * one (the LWK said EFAULT: it read the path as "no string here"). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(void) {
    static char p[5000];
    memset(p, 'a', sizeof p - 1);
    struct stat s;
    printf("stat %s\n", stat(p, &s) ? strerrorname_np(errno) : "ok");
    printf("open %s\n", open(p, O_RDONLY) < 0 ? strerrorname_np(errno) : "ok");
    printf("access %s\n", access(p, F_OK) ? strerrorname_np(errno) : "ok");
    printf("execve %s\n", execve(p, (char *[]){p, NULL}, NULL) ? strerrorname_np(errno) : "ok");
    return 0;
}
