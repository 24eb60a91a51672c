/* Issue #16 item 7: closefrom, close_range, /proc/self/fd, /proc/self/{cwd,root}/… and opening as
 * many files as the soft RLIMIT_NOFILE allows, as natively. argv[1]: a directory holding "f". */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC 4
#endif

static int readable(const char *path) {
    char buf[16] = {0};
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    int ok = read(fd, buf, sizeof buf) == 5 && memcmp(buf, "hello", 5) == 0;
    close(fd);
    return ok;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = 1024;
    printf("setrlimit soft 1024: %d\n", setrlimit(RLIMIT_NOFILE, &rl));
    getrlimit(RLIMIT_NOFILE, &rl);
    printf("soft %lu, hard above soft: %d\n", (unsigned long)rl.rlim_cur, rl.rlim_max >= rl.rlim_cur);

    int a = open("/dev/null", O_RDONLY), b = dup(a);
    closefrom(3);
    printf("closefrom(3): %s\n", fcntl(a, F_GETFD) < 0 && fcntl(b, F_GETFD) < 0 ? "closed" : "OPEN");
    a = open("/dev/null", O_RDONLY);
    /* (one call per statement: printf's arguments are evaluated in no fixed order) */
    int r = close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
    printf("close_range cloexec: %d, flag %s\n", r, fcntl(a, F_GETFD) == FD_CLOEXEC ? "set" : "NOT SET");
    r = close_range(3, ~0U, 0);
    printf("close_range: %d, fd %s\n", r, fcntl(a, F_GETFD) < 0 ? "closed" : "OPEN");
    r = close_range(3, 10, 0x80);
    printf("close_range bad flags: %d %s\n", r, errno == EINVAL ? "EINVAL" : strerror(errno));
    r = close_range(10, 3, 0);
    printf("close_range first > last: %d %s\n", r, errno == EINVAL ? "EINVAL" : strerror(errno));

    /* /proc/self/fd lists 0, 1, 2 and the directory itself. */
    DIR *d = opendir("/proc/self/fd");
    printf("/proc/self/fd:");
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.') printf(" %s", e->d_name);
    printf("\n");
    if (d) closedir(d);

    char path[4096];
    snprintf(path, sizeof path, "%s/f", argv[1]);
    int f = open(path, O_RDONLY);
    char via[64];
    snprintf(via, sizeof via, "/proc/self/fd/%d", f);
    printf("%s: %s\n", "reopen through /proc/self/fd/N", readable(via) ? "ok" : "FAILED");
    close(f);
    if (chdir(argv[1]) != 0) return 3;
    printf("/proc/self/cwd/f: %s\n", readable("/proc/self/cwd/f") ? "ok" : "FAILED");
    snprintf(path, sizeof path, "/proc/self/root%s/f", argv[1]);
    printf("/proc/self/root/…/f: %s\n", readable(path) ? "ok" : "FAILED");

    /* The open flags keep their meaning (the LWK judges a file before the real open). */
    char b2[8] = {0};
    struct stat st;
    r = open("new", O_CREAT | O_WRONLY, 0644);
    printf("create: %s\n", r >= 0 && write(r, "abc", 3) == 3 ? "ok" : strerror(errno));
    close(r);
    r = open("new", O_CREAT | O_EXCL | O_WRONLY, 0644);
    printf("O_EXCL on an existing file: %s\n", r < 0 && errno == EEXIST ? "EEXIST" : "?");
    r = open("new", O_WRONLY | O_APPEND);
    printf("append: %ld, ", (long)write(r, "d", 1));
    close(r);
    r = open("new", O_RDONLY);
    printf("read back %ld: %s\n", (long)read(r, b2, 7), b2);
    close(r);
    r = open("new", O_WRONLY | O_TRUNC);
    close(r);
    stat("new", &st);
    printf("O_TRUNC: size %ld\n", (long)st.st_size);
    symlink("new", "link");
    r = open("link", O_RDONLY | O_NOFOLLOW);
    printf("O_NOFOLLOW on a symlink: %s\n", r < 0 && errno == ELOOP ? "ELOOP" : "?");
    r = open("link", O_PATH | O_NOFOLLOW);
    printf("O_PATH|O_NOFOLLOW: %s\n",
           r >= 0 && fstatat(r, "", &st, AT_EMPTY_PATH) == 0 && S_ISLNK(st.st_mode) ? "the link" : "?");
    close(r);
    r = open("f", O_RDONLY | O_DIRECTORY);
    printf("O_DIRECTORY on a file: %s\n", r < 0 && errno == ENOTDIR ? "ENOTDIR" : "?");
    r = open(".", O_TMPFILE | O_RDWR, 0600);
    printf("O_TMPFILE: %s\n", r >= 0 ? "ok" : strerror(errno));
    close(r);
    symlink("target", "dangling");
    r = open("dangling", O_CREAT | O_WRONLY, 0644);
    printf("O_CREAT through a dangling symlink: %s\n", r >= 0 && access("target", F_OK) == 0 ? "created" : "?");
    close(r);
    r = open("missing", O_RDONLY);
    printf("missing: %s\n", r < 0 && errno == ENOENT ? "ENOENT" : "?");
    unlink("new");
    unlink("link");
    unlink("dangling");
    unlink("target");

    int n = 0, last = -1;
    for (;;) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd < 0) break;
        n++;
        last = fd;
    }
    int e = errno;
    printf("opened %d files, the last fd %d, then %s\n", n, last, e == EMFILE ? "EMFILE" : strerror(e));
    int p[2];
    r = pipe(p);
    printf("pipe at the limit: %d %s\n", r, errno == EMFILE ? "EMFILE" : strerror(errno));
    close(1023);
    r = pipe(p);
    printf("pipe with one fd free: %d %s\n", r, errno == EMFILE ? "EMFILE" : strerror(errno));
    r = dup2(0, 1024);
    printf("dup2 to the soft limit: %d %s\n", r, errno == EBADF ? "EBADF" : strerror(errno));
    r = fcntl(0, F_DUPFD, 1024);
    printf("F_DUPFD from the soft limit: %d %s\n", r, errno == EINVAL ? "EINVAL" : strerror(errno));
    closefrom(3);
    printf("after closefrom: open gives %d\n", open("/dev/null", O_RDONLY));
    return 0;
}
