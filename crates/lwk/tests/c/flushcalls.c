/* Issue #15: calls that make the host flush TLBs, served on the calling vCPU's thread with the
 * proxy parked (`aside.rs`, `syscall/onvcpu.rs`) — their results must be native's: a tightening
 * mprotect still lets the page be read, munmap and MADV_DONTNEED give memory that reads zero, a
 * file mapped over anonymous data shows the file, mremap moves the data, brk shrinks and grows
 * back zeroed, and a forked child's writes stay its own. argv[1]: rounds. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static int zero(const char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 20, bad = 0;
    char path[] = "/tmp/multios-flushcalls-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return 1;
    unlink(path);
    char block[8192];
    memset(block, 'f', sizeof block);
    if (write(fd, block, sizeof block) != (ssize_t)sizeof block) return 1;
    for (int r = 0; r < rounds; r++) {
        char *p = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return 1;
        memset(p, 'a' + r % 26, 1 << 16);
        /* Take write away, read, give it back. */
        if (mprotect(p, 4096, PROT_READ) || p[10] != 'a' + r % 26) bad++;
        if (mprotect(p, 4096, PROT_READ | PROT_WRITE)) bad++;
        p[10] = 'x';
        /* Dropped pages read zero. */
        if (madvise(p + 4096, 8192, MADV_DONTNEED) || !zero(p + 4096, 8192)) bad++;
        /* A file over anonymous data shows the file. */
        char *f = mmap(p + 16384, 8192, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
        if (f != p + 16384 || f[0] != 'f' || f[8191] != 'f') bad++;
        /* mremap moves the rest. */
        char *q = mremap(p + 32768, 32768, 65536, MREMAP_MAYMOVE);
        if (q == MAP_FAILED || q[0] != 'a' + r % 26 || !zero(q + 32768, 32768)) bad++;
        /* The freed range, mapped again, reads zero. */
        if (munmap(p, 32768)) bad++;
        char *again = mmap(p, 32768, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        if (again != p || !zero(again, 32768)) bad++;
        munmap(again, 32768);
        if (q != MAP_FAILED) munmap(q, 65536);
        /* brk shrinks and grows back zeroed. */
        char *b = sbrk(0);
        if (sbrk(65536) == (void *)-1) return 1;
        memset(b, 'b', 65536);
        if (brk(b) || sbrk(65536) == (void *)-1 || !zero(b, 65536)) bad++;
        brk(b);
        /* A forked child's writes stay its own. */
        char *c = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        c[0] = 'p';
        pid_t pid = fork();
        if (pid == 0) {
            c[0] = 'c';
            _exit(c[0] == 'c' ? 0 : 1);
        }
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) || c[0] != 'p') bad++;
        munmap(c, 4096);
    }
    printf("rounds %d, wrong %d\n", rounds, bad);
    return bad != 0;
}
