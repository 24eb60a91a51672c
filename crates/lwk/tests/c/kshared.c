/* Issue #14: memory shared with a forked child — MAP_SHARED anonymous memory, /dev/zero and a
 * memfd mapped MAP_SHARED are the same pages in parent and child (a guest fork forks the VMM);
 * MAP_PRIVATE is not; a hole punched in a mapped memfd reads as zeros; mprotect giving write
 * access to a shared mapping of a read-only file is EACCES; with "huge", MAP_HUGETLB memory
 * (2 MiB pages) shared the same way, or its errno. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define LEN (3 * 4096)

static sigjmp_buf back;

static void on_segv(int sig) {
    (void)sig;
    siglongjmp(back, 1);
}

/* Writes one byte at `p`: "SIGSEGV" or "written". The host mapping behind such pages is writable
 * in the LWK; the guest's page tables must keep the guest's protection. */
static const char *try_write(char *p) {
    if (sigsetjmp(back, 1)) return "SIGSEGV";
    *(volatile char *)p = 1;
    return "written";
}

/* The child writes `msg` at page 1 of `p` and exits; the parent prints what it then sees. */
static void share_with_child(const char *what, char *p) {
    strcpy(p + 4096, "parent's");
    pid_t c = fork();
    if (c == 0) {
        strcpy(p + 4096, "child's");
        p[LEN - 1] = 'z';
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    printf("%s: parent sees %s write, last byte %d\n", what, p + 4096, p[LEN - 1]);
}

static char *map_shared_fd(const char *path) {
    int fd = open(path, O_RDWR);
    if (fd < 0) return MAP_FAILED;
    char *p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return p;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    char *anon = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    char *priv = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *zero = map_shared_fd("/dev/zero");
    if (anon == MAP_FAILED || priv == MAP_FAILED || zero == MAP_FAILED) return 2;
    share_with_child("MAP_SHARED|MAP_ANONYMOUS", anon);
    share_with_child("MAP_PRIVATE|MAP_ANONYMOUS", priv);
    share_with_child("/dev/zero MAP_SHARED", zero);

    int mfd = memfd_create("kshared", 0);
    if (mfd < 0 || ftruncate(mfd, LEN) != 0) return 3;
    char *m = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    if (m == MAP_FAILED) return 4;
    share_with_child("memfd MAP_SHARED", m);
    char buf[16] = {0};
    pread(mfd, buf, 7, 4096);
    printf("memfd file holds: %s\n", buf);
    /* A second mapping made by the child after fork is not the parent's, but the file is. */
    pid_t c = fork();
    if (c == 0) {
        char *q = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
        strcpy(q, "from the child's own mapping");
        _exit(0);
    }
    waitpid(c, NULL, 0);
    printf("memfd: parent sees %s\n", m);
    memset(m, 'x', LEN);
    int punched = fallocate(mfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096, 4096);
    int zeros = 1;
    for (int i = 4096; i < 8192; i++) zeros &= m[i] == 0;
    printf("hole punched: %d, reads zero through the mapping: %d, neighbours kept: %d %d\n", punched,
           zeros, m[4095] == 'x', m[8192] == 'x');

    /* Protections stay the guest's: PROT_READ shared anonymous memory and a PROT_READ private
     * file mapping (both writable host mappings in the LWK) fault on a write. */
    signal(SIGSEGV, on_segv);
    char *ra = mmap(NULL, 4096, PROT_READ, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    char *rp = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, mfd, 0);
    printf("write to PROT_READ shared anonymous: %s\n", try_write(ra));
    printf("write to PROT_READ private file mapping: %s\n", try_write(rp));
    mprotect(rp, 4096, PROT_READ | PROT_WRITE);
    printf("after mprotect RW: %s, file unchanged: %d\n", try_write(rp), (pread(mfd, buf, 1, 0), buf[0] == 'x'));
    signal(SIGSEGV, SIG_DFL);

    /* Write access to a shared mapping is the file's to grant. */
    const char *path = argc > 1 ? argv[1] : "kshared.dat";
    int wfd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (wfd < 0 || ftruncate(wfd, 4096) != 0) return 5;
    int rfd = open(path, O_RDONLY);
    char *ro = mmap(NULL, 4096, PROT_READ, MAP_SHARED, rfd, 0);
    errno = 0;
    int r = mprotect(ro, 4096, PROT_READ | PROT_WRITE);
    printf("mprotect RW of a read-only file's shared mapping: %d (%s)\n", r, r ? strerror(errno) : "ok");
    char *rw = mmap(NULL, 4096, PROT_READ, MAP_SHARED, wfd, 0);
    r = mprotect(rw, 4096, PROT_READ | PROT_WRITE);
    if (r == 0) strcpy(rw, "written after mprotect");
    pread(wfd, buf, 15, 0);
    printf("mprotect RW of a read-write file's: %d, file holds %.15s\n", r, buf);

    /* mremap of a shared file mapping: grown (moved, since a mapping sits right after it), the
     * same pages, then shrunk. */
    if (ftruncate(wfd, 3 * 4096) != 0) return 6;
    char *g = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, wfd, 0);
    char *blocker = mmap(g + 4096, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    pwrite(wfd, "third page", 10, 2 * 4096);
    char *g2 = mremap(g, 4096, 3 * 4096, MREMAP_MAYMOVE);
    if (g2 == MAP_FAILED) {
        printf("mremap grow: %s\n", strerror(errno));
    } else {
        printf("mremap grow: moved %d, keeps page 0: %.15s, sees page 2: %s\n", g2 != g, g2,
               g2 + 2 * 4096);
        strcpy(g2 + 4096, "via the grown mapping");
        pread(wfd, buf, 15, 4096);
        printf("file page 1 holds: %.15s\n", buf);
        char *g3 = mremap(g2, 3 * 4096, 4096, 0);
        printf("mremap shrink in place: %d\n", g3 == g2);
        munmap(g3, 4096);
    }
    if (blocker != MAP_FAILED) munmap(blocker, 4096);

    /* MREMAP_FIXED: private memory and a shared file mapping moved to a chosen address. */
    char *target = mmap(NULL, 8 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *pm = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    strcpy(pm + 4096, "private bytes");
    char *pf = mremap(pm, 2 * 4096, 3 * 4096, MREMAP_MAYMOVE | MREMAP_FIXED, target);
    printf("MREMAP_FIXED private: at target %d, holds %s, new page zero %d\n", pf == target, pf + 4096,
           pf[2 * 4096] == 0);
    char *sm = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, wfd, 0);
    char *sf = mremap(sm, 4096, 4096, MREMAP_MAYMOVE | MREMAP_FIXED, target + 4 * 4096);
    strcpy(sf + 100, "moved shared");
    pread(wfd, buf, 12, 100);
    printf("MREMAP_FIXED shared: at target %d, file holds %.12s\n", sf == target + 4 * 4096, buf);
    errno = 0;
    printf("MREMAP_FIXED overlapping: %s\n",
           mremap(target, 2 * 4096, 2 * 4096, MREMAP_MAYMOVE | MREMAP_FIXED, target + 4096) == MAP_FAILED
               ? strerror(errno)
               : "moved");
    munmap(target, 8 * 4096);
    unlink(path);

    if (argc > 2 && strcmp(argv[2], "huge") == 0) {
        size_t hl = 2 << 20;
        char *h = mmap(NULL, hl, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
        if (h == MAP_FAILED) {
            printf("MAP_HUGETLB: %s\n", strerror(errno));
        } else {
            printf("MAP_HUGETLB: mapped, 2 MiB aligned: %d\n", ((uintptr_t)h & (hl - 1)) == 0);
            strcpy(h + 4096, "parent's");
            pid_t k = fork();
            if (k == 0) {
                strcpy(h + 4096, "child's");
                _exit(0);
            }
            waitpid(k, NULL, 0);
            printf("MAP_HUGETLB shared: parent sees %s write\n", h + 4096);
            munmap(h, hl);
        }
    }
    if (argc > 3) {
        /* A file of a hugetlbfs mount, mapped shared. */
        char hp[512];
        snprintf(hp, sizeof hp, "%s/kshared.huge", argv[3]);
        int hfd = open(hp, O_RDWR | O_CREAT | O_TRUNC, 0600);
        size_t hl = 2 << 20;
        char *h = hfd < 0 ? MAP_FAILED : mmap(NULL, hl, PROT_READ | PROT_WRITE, MAP_SHARED, hfd, 0);
        if (h == MAP_FAILED) {
            printf("hugetlbfs file: %s\n", strerror(errno));
        } else {
            printf("hugetlbfs file: mapped, 2 MiB aligned: %d\n", ((uintptr_t)h & (hl - 1)) == 0);
            pid_t k = fork();
            if (k == 0) {
                strcpy(h + 8192, "the child's bytes in a huge page");
                _exit(0);
            }
            waitpid(k, NULL, 0);
            munmap(h, hl);
            char *again = mmap(NULL, hl, PROT_READ, MAP_SHARED, hfd, 0);
            printf("hugetlbfs file mapped again holds: %s\n", again == MAP_FAILED ? "?" : again + 8192);
        }
        if (hfd >= 0) close(hfd);
        unlink(hp);
    }
    return 0;
}
