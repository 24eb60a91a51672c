/* Issue #16 (twenty-first session): open(O_CREAT) through a dangling symbolic link. Usage:
 *   danglink links DIR       what Linux does: the target is created (relative, absolute, through
 *                            a chain, from a dirfd); a loop is ELOOP; O_NOFOLLOW is ELOOP.
 *   danglink race DIR SECS   a forked child swaps DIR/lnk between a dangling link and one to
 *                            /proc/self/mem while the program opens DIR/lnk with O_CREAT and a
 *                            thread looks at fds 3..7 for a procfs file: the LWK used to open such
 *                            a name as asked after four tries and judge it after, with the VMM's
 *                            own /proc/PID/mem in the guest's range meanwhile. Prints what the
 *                            thread saw ("procfs fds seen 0" in the LWK).
 *   danglink opath /         openat(/proc/self, "mem", O_PATH|O_CREAT|O_EXCL): the kernel ignores
 *                            O_CREAT with O_PATH, so this reaches the existing file (in the LWK
 *                            the VMM's: "Permission denied"). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *dir;

static void show(const char *what, int fd) {
    printf("%-34s %s\n", what, fd >= 0 ? "ok" : strerrorname_np(errno));
    if (fd >= 0)
        close(fd);
}

static void exists(const char *rel) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    printf("  %-32s %s\n", rel, access(p, F_OK) == 0 ? "exists" : "missing");
}

static int at(const char *rel, int flags) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    return open(p, flags, 0600);
}

static int links(void) {
    char p[512], q[512];
    snprintf(p, sizeof p, "%s/sub", dir);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/a", dir);
    symlink("b", p);
    show("O_CREAT through a -> b", at("a", O_RDWR | O_CREAT));
    exists("b");
    snprintf(p, sizeof p, "%s/c", dir);
    symlink("sub/d", p);
    snprintf(p, sizeof p, "%s/sub/d", dir);
    symlink("../e", p);
    show("O_CREAT through c -> sub/d -> ../e", at("c", O_WRONLY | O_CREAT | O_TRUNC));
    exists("e");
    snprintf(p, sizeof p, "%s/f", dir);
    snprintf(q, sizeof q, "%s/sub/g", dir);
    symlink(q, p);
    show("O_CREAT through f -> DIR/sub/g", at("f", O_RDWR | O_CREAT));
    exists("sub/g");
    int d = open(dir, O_RDONLY | O_DIRECTORY);
    snprintf(p, sizeof p, "%s/sub/h", dir);
    symlink("i", p);
    show("openat(DIR, sub/h -> i, O_CREAT)", openat(d, "sub/h", O_RDWR | O_CREAT, 0600));
    exists("sub/i");
    close(d);
    snprintf(p, sizeof p, "%s/loop", dir);
    symlink("loop", p);
    show("O_CREAT through loop -> loop", at("loop", O_RDWR | O_CREAT));
    snprintf(p, sizeof p, "%s/n", dir);
    symlink("m", p);
    show("O_CREAT|O_NOFOLLOW through n -> m", at("n", O_RDWR | O_CREAT | O_NOFOLLOW));
    exists("m");
    show("O_CREAT|O_EXCL through n -> m", at("n", O_RDWR | O_CREAT | O_EXCL));
    show("O_CREAT of a plain new name", at("plain", O_RDWR | O_CREAT));
    show("O_CREAT of it again", at("plain", O_RDWR | O_CREAT));
    return 0;
}

static volatile int stop;
static volatile long seen;

static void *look(void *x) {
    (void)x;
    while (!stop)
        for (int fd = 3; fd < 8; fd++) {
            struct statfs s;
            if (fstatfs(fd, &s) == 0 && s.f_type == 0x9fa0)
                seen++;
        }
    return NULL;
}

static int race(int secs) {
    char lnk[512], alt[512], mem[512] = "";
    snprintf(lnk, sizeof lnk, "%s/lnk", dir);
    snprintf(alt, sizeof alt, "%s/alt", dir);
    /* A relative spelling of /proc/self/mem from DIR: one ".." per component of DIR. */
    for (const char *c = dir; *c; c++)
        if (*c == '/' && c[1] && c[1] != '/')
            strcat(mem, "../");
    strcat(mem, "proc/self/mem");
    unlink(lnk);
    unlink(alt);
    symlink("no-such-dir/x", lnk);
    symlink(mem, alt);
    pid_t c = fork();
    if (c == 0)
        for (;;)
            syscall(SYS_renameat2, AT_FDCWD, alt, AT_FDCWD, lnk, 2 /* RENAME_EXCHANGE */);
    pthread_t t;
    pthread_create(&t, NULL, look, NULL);
    long tries = 0;
    for (time_t t0 = time(NULL); time(NULL) - t0 < secs; tries++) {
        int fd = open(lnk, O_RDWR | O_CREAT, 0600);
        if (fd >= 0) {
            struct statfs s;
            if (fstatfs(fd, &s) == 0 && s.f_type == 0x9fa0)
                seen++;
            close(fd);
        }
    }
    stop = 1;
    pthread_join(t, NULL);
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
    printf("opens %s\nprocfs fds seen %ld\n", tries > 100 ? "many" : "few", seen);
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc < 3)
        return 2;
    dir = argv[2];
    if (strcmp(argv[1], "links") == 0)
        return links();
    if (strcmp(argv[1], "opath") == 0) {
        int d = open("/proc/self", O_PATH | O_DIRECTORY);
        int m = openat(d, "mem", O_PATH | O_CREAT | O_EXCL, 0);
        printf("%s\n", m < 0 ? strerror(errno) : "opened");
        return 0;
    }
    return race(argc > 3 ? atoi(argv[3]) : 5);
}
