/* inotify and ioprio in the LWK (reported 2026-11-28: both were ENOSYS, and `tail -f` fell back
 * to polling; inotify_init was even listed as served). A watch on a new directory sees a file
 * created there; the I/O priority set is read back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
    char dir[] = "/tmp/multios-inotify-XXXXXX";
    if (!mkdtemp(dir))
        return 2;
    int fd = inotify_init1(IN_CLOEXEC);
    if (fd < 0) {
        perror("inotify_init1");
        return 1;
    }
    int wd = inotify_add_watch(fd, dir, IN_CREATE);
    char path[128];
    snprintf(path, sizeof path, "%s/new-file", dir);
    FILE *f = fopen(path, "w");
    if (wd < 0 || !f) {
        perror("inotify_add_watch");
        return 1;
    }
    fclose(f);
    char buf[4096] __attribute__((aligned(8)));
    ssize_t n = read(fd, buf, sizeof buf);
    struct inotify_event *ev = (struct inotify_event *)buf;
    printf("event: %s %s\n", n > 0 && (ev->mask & IN_CREATE) ? "created" : "none", n > 0 ? ev->name : "");
    printf("rm_watch: %d\n", inotify_rm_watch(fd, wd));
    unlink(path);
    rmdir(dir);
    /* IOPRIO_WHO_PROCESS 1, class idle (3) << 13 */
    long set = syscall(SYS_ioprio_set, 1, 0, 3 << 13);
    long get = syscall(SYS_ioprio_get, 1, 0);
    printf("ioprio: set %ld, class %ld\n", set, get >> 13);
    return 0;
}
