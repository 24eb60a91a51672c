/* Issue #16: a guest that names its own program `orted` (a name of the default --linux-exec list)
 * must not get it run on Linux. `i16x_orted DIR` copies itself to DIR/orted and DIR/lnk/orted (a
 * symlink), forks, and each child execs one of them as `orted child`: the child tries what only a
 * native process can do to its parent (a VMM in the LWK): read the LWK's system page with
 * process_vm_readv and open /proc/PARENT/mem for writing. In the LWK both are refused; the
 * parent prints what each child reported. Natively (no VMM) nothing is there to reach, and the
 * child just reports the same refusals (the system page is unmapped: EFAULT/ESRCH-like). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static int child(void) {
    pid_t parent = getppid();
    unsigned char b[16];
    struct iovec l = {b, sizeof b}, r = {(void *)0x7e0000000000UL, sizeof b};
    ssize_t n = process_vm_readv(parent, &l, 1, &r, 1, 0);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/mem", parent);
    int m = open(path, O_RDWR);
    printf("child: read the parent's system page: %s; opened its mem: %s\n", n > 0 ? "YES" : "no",
           m >= 0 ? "YES" : "no");
    return 0;
}

static void copy(const char *from, const char *to) {
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    char buf[65536];
    ssize_t n;
    if (in < 0 || out < 0) {
        perror("copy");
        exit(1);
    }
    while ((n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, n) != n) {
            perror("write");
            exit(1);
        }
    close(in);
    close(out);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc > 1 && strcmp(argv[1], "child") == 0) return child();
    if (argc < 2) {
        fprintf(stderr, "usage: i16x_orted DIR\n");
        return 2;
    }
    char self[4096] = {0}, dst[4096], lnkdir[4096], lnk[4096];
    if (readlink("/proc/self/exe", self, sizeof self - 1) < 0) strncpy(self, argv[0], sizeof self - 1);
    snprintf(dst, sizeof dst, "%s/orted", argv[1]);
    snprintf(lnkdir, sizeof lnkdir, "%s/lnk", argv[1]);
    snprintf(lnk, sizeof lnk, "%s/orted", lnkdir);
    copy(self, dst);
    mkdir(lnkdir, 0755);
    unlink(lnk);
    if (symlink(dst, lnk) != 0) perror("symlink");
    const char *progs[] = {dst, lnk};
    for (int i = 0; i < 2; i++) {
        pid_t c = fork();
        if (c == 0) {
            execl(progs[i], "orted", "child", (char *)NULL);
            perror("execl");
            _exit(127);
        }
        int st;
        waitpid(c, &st, 0);
        printf("%s: exit %d\n", i ? "symlink" : "copy", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    }
    return 0;
}
