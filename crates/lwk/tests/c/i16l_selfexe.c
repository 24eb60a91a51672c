/* Issue #16: the process's own `exe` link, however spelled, is its program — opened, read,
 * resolved with readlink and exec'd — also after the program file was deleted. In the LWK only
 * the exact string "/proc/self/exe" was the guest's program; /proc/PID/exe, /proc/thread-self/exe,
 * /proc/self/./exe… opened, named and exec'd the VMM's binary (lwk-run, 23 MB).
 * Usage: i16l_selfexe DIR (a scratch directory; the program copies itself there and runs the copy
 * with "deleted", which deletes itself first). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Size and a checksum of what `fd` reads to its end. */
static void digest(int fd, long *size, unsigned long *sum) {
    char b[65536];
    ssize_t n;
    *size = 0; *sum = 5381;
    while ((n = read(fd, b, sizeof b)) > 0) {
        for (ssize_t i = 0; i < n; i++) *sum = *sum * 33 + (unsigned char)b[i];
        *size += n;
    }
}

/* open(2) of `path` against the program itself (the file at `self`). */
static void check_open(const char *label, const char *path, const char *self) {
    long s1, s2; unsigned long c1, c2;
    int fd = open(path, O_RDONLY), me = open(self, O_RDONLY);
    if (fd < 0 || me < 0) { printf("open %s: %s\n", label, strerror(errno)); return; }
    digest(fd, &s1, &c1); digest(me, &s2, &c2);
    printf("open %s: %s\n", label, s1 == s2 && c1 == c2 ? "the program" : "another file");
    close(fd); close(me);
}

static void show_readlink(const char *label, int dir, const char *path) {
    char b[4096];
    ssize_t k = readlinkat(dir, path, b, sizeof b - 1);
    if (k < 0) { printf("readlink %s: %s\n", label, strerror(errno)); return; }
    b[k] = 0;
    printf("readlink %s: %s\n", label, b);
}

static void run_as(const char *label, const char *path) {
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        /* The child's own pid and tid (the parent's /proc/PID/exe is the parent's program: in the
         * LWK another VMM's, which still leads to lwk-run, see docs/LWK.md). */
        char own[96];
        if (!strcmp(label, "pid")) snprintf(own, sizeof own, "/proc/%d/exe", getpid()), path = own;
        if (!strcmp(label, "task"))
            snprintf(own, sizeof own, "/proc/%d/task/%ld/exe", getpid(), (long)syscall(SYS_gettid)), path = own;
        char *a[] = {(char *)path, "child", (char *)label, 0};
        execv(path, a);
        printf("exec %s: %s\n", label, strerror(errno));
        _exit(1);
    }
    int st;
    waitpid(p, &st, 0);
    printf("exec %s: status %d\n", label, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

int main(int argc, char **argv) {
    if (argc > 2 && !strcmp(argv[1], "child")) {
        printf("  child of %s runs\n", argv[2]);
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "deleted")) {
        if (unlink(argv[0])) { perror("unlink"); return 2; }
        long size; unsigned long sum;
        int fd = open("/proc/self/exe", O_RDONLY);
        if (fd < 0) { printf("deleted: open: %s\n", strerror(errno)); return 1; }
        digest(fd, &size, &sum);
        close(fd);
        printf("deleted: open reads %s bytes\n", size > 1000 ? "the program's" : "too few");
        char b[4096];
        ssize_t k = readlink("/proc/self/exe", b, sizeof b - 1);
        if (k >= 0) b[k] = 0;
        printf("deleted: readlink ends in (deleted): %s\n",
               k > 10 && !strcmp(b + k - 10, " (deleted)") ? "yes" : "no");
        return 0;
    }
    if (argc < 2) return 2;
    char self[4096];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k < 0) { perror("readlink"); return 2; }
    self[k] = 0;
    struct stat st;
    if (stat(argv[0], &st)) { perror("stat argv[0]"); return 2; }
    char real[4096];
    printf("readlink /proc/self/exe is argv[0]'s real path: %s\n",
           realpath(argv[0], real) && !strcmp(real, self) ? "yes" : "no");

    char pid_exe[64], task_exe[96], link[4096];
    snprintf(pid_exe, sizeof pid_exe, "/proc/%d/exe", getpid());
    snprintf(task_exe, sizeof task_exe, "/proc/%d/task/%ld/exe", getpid(), (long)syscall(SYS_gettid));
    snprintf(link, sizeof link, "%s/selflink", argv[1]);
    unlink(link);
    if (symlink("/proc/self/exe", link)) { perror("symlink"); return 2; }
    const char *names[][2] = {
        {"self", "/proc/self/exe"},   {"pid", pid_exe},
        {"thread-self", "/proc/thread-self/exe"}, {"self/./", "/proc/self/./exe"},
        {"self//", "/proc//self//exe"}, {"task", task_exe},
        {"symlink", link},
    };
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
        check_open(names[i][0], names[i][1], self);
        show_readlink(names[i][0], AT_FDCWD, names[i][1]);
    }
    /* Relative to a descriptor of /proc/self, and after a chdir there. */
    int d = open("/proc/self", O_RDONLY | O_DIRECTORY);
    show_readlink("dirfd", d, "exe");
    int e = openat(d, "exe", O_RDONLY);
    printf("openat dirfd: %s\n", e >= 0 ? "ok" : strerror(errno));
    if (e >= 0) close(e);
    close(d);
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) return 2;
    if (chdir("/proc/self")) { perror("chdir"); return 2; }
    show_readlink("relative", AT_FDCWD, "exe");
    check_open("relative", "exe", self);
    if (chdir(cwd)) return 2;
    /* O_NOFOLLOW: the link itself (ELOOP for a plain open, an fd with O_PATH). */
    int n = open("/proc/self/exe", O_RDONLY | O_NOFOLLOW);
    printf("open O_NOFOLLOW: %s\n", n >= 0 ? "ok" : strerror(errno));
    n = open("/proc/self/exe", O_PATH | O_NOFOLLOW);
    printf("open O_PATH|O_NOFOLLOW: %s\n", n >= 0 ? "ok" : strerror(errno));

    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) run_as(names[i][0], names[i][1]);

    /* A copy of the program, read through the exe link, runs and deletes itself. */
    char copy[4096];
    snprintf(copy, sizeof copy, "%s/copy", argv[1]);
    int in = open("/proc/self/exe", O_RDONLY), out = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    char b[65536];
    ssize_t r;
    while (in >= 0 && out >= 0 && (r = read(in, b, sizeof b)) > 0)
        if (write(out, b, r) != r) return 2;
    close(in); close(out);
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        char *a[] = {copy, "deleted", 0};
        execv(copy, a);
        _exit(127);
    }
    int s;
    waitpid(p, &s, 0);
    printf("deleted copy: status %d\n", WIFEXITED(s) ? WEXITSTATUS(s) : -1);
    return 0;
}
