/* Issue #13 with #14's shared mappings: a single-threaded guest's mprotect that takes access away.
 * For private anonymous memory the LWK drops only the range's shadow entries (a host mprotect to
 * read-only and back); over the host's own mappings (a memfd or file mapped MAP_SHARED, MAP_SHARED
 * anonymous memory) it drops every shadow table instead, leaving the host protection alone (a
 * private file mapping, read-write in the host, takes the range path too). Either
 * way the guest must see Linux's behaviour: the write or read faults right after mprotect, works
 * again after mprotect gives access back, and a read-only file's mapping still refuses write
 * access (EACCES). Prints one line per check; the output is compared with native. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static sigjmp_buf back;

static void on_segv(int sig) {
    (void)sig;
    siglongjmp(back, 1);
}

static const char *try_write(char *p, char v) {
    if (sigsetjmp(back, 1)) return "SIGSEGV";
    *(volatile char *)p = v;
    return "written";
}

static const char *try_read(char *p) {
    if (sigsetjmp(back, 1)) return "SIGSEGV";
    return *(volatile char *)p ? "read" : "read zero";
}

/* Write, take write away, write, give it back, write: the three results and the final byte. */
static void cycle(const char *what, char *p) {
    const char *a = try_write(p, 'a');
    mprotect(p, 4096, PROT_READ);
    const char *b = try_write(p, 'b');
    mprotect(p, 4096, PROT_READ | PROT_WRITE);
    const char *c = try_write(p, 'c');
    printf("%s: %s, after PROT_READ %s, after RW %s, holds %c\n", what, a, b, c, *p);
}

int main(int argc, char **argv) {
    struct sigaction sa = {0};
    sa.sa_handler = on_segv;
    sa.sa_flags = SA_NODEFER;
    sigaction(SIGSEGV, &sa, NULL);

    char *anon = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cycle("private anonymous", anon);

    char *shanon = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    cycle("shared anonymous", shanon);

    int mfd = memfd_create("tighten", 0);
    if (mfd < 0 || ftruncate(mfd, 4096) != 0) return 2;
    char *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    cycle("shared memfd", mem);
    char byte = 0;
    printf("memfd's byte: %c\n", pread(mfd, &byte, 1, 0) == 1 ? byte : '?');

    /* A private file mapping (the host's own, read-write there whatever the guest asked: since
     * issue #13 the LWK drops only its range's shadow entries, as ld.so's RELRO mprotect of a
     * library's data needs); the file keeps its bytes. */
    int pfd = memfd_create("tighten-private", 0);
    if (pfd < 0 || write(pfd, "ffff", 4) != 4 || ftruncate(pfd, 4096) != 0) return 5;
    char *priv = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, pfd, 0);
    if (priv == MAP_FAILED) return 6;
    cycle("private file", priv);
    printf("private file's byte: %c\n", pread(pfd, &byte, 1, 0) == 1 ? byte : '?');

    /* A file opened read-only, mapped shared and readable: take reading away and give it back. */
    const char *path = argc > 1 ? argv[1] : "tighten.data";
    int w = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    if (w < 0 || write(w, "file", 4) != 4) return 3;
    close(w);
    int r = open(path, O_RDONLY);
    char *ro = mmap(NULL, 4096, PROT_READ, MAP_SHARED, r, 0);
    if (ro == MAP_FAILED) return 4;
    const char *x = try_read(ro);
    mprotect(ro, 4096, PROT_NONE);
    const char *y = try_read(ro);
    mprotect(ro, 4096, PROT_READ);
    const char *z = try_read(ro);
    int e = mprotect(ro, 4096, PROT_READ | PROT_WRITE);
    printf("read-only file: %s, after PROT_NONE %s, after PROT_READ %s (%.4s); RW: %d (%s)\n", x, y,
           z, ro, e, e ? strerror(errno) : "ok");
    unlink(path);
    return 0;
}
