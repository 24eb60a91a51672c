/* Issue #16 (twenty-first session): the VMM's fds named relative to a procfs directory. An O_PATH
 * fd of /proc/self/fd used as the dirfd of readlinkat, and a working directory of /proc/self/fd
 * with fstatat(AT_FDCWD, "N"), listed every VMM fd (/dev/kvm, kvm-vcpu:0, the eventfd…) past the
 * name net, which reads absolute /proc/… names only. Prints what it saw of numbers ≥ 1000. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(void) {
    char l[256];
    int found = 0, st = 0, own = 0;
    int d = open("/proc/self/fd", O_PATH | O_DIRECTORY);
    if (d < 0 || chdir("/proc/self/fd") != 0) {
        perror("/proc/self/fd");
        return 1;
    }
    for (int n = 0; n < 70000; n++) {
        char b[16];
        snprintf(b, sizeof b, "%d", n);
        if (readlinkat(d, b, l, sizeof l) > 0) {
            if (n >= 1000)
                found++;
            else
                own++;
        }
        struct stat s;
        if (n >= 1000 && fstatat(AT_FDCWD, b, &s, AT_SYMLINK_NOFOLLOW) == 0)
            st++;
    }
    printf("own fds seen %s, fds >= 1000 seen by readlinkat %d, by fstatat %d\n", own >= 3 ? "yes" : "no",
           found, st);
    return 0;
}
