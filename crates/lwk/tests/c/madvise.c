/* Issue #16: madvise as Linux checks and applies it. MADV_WIPEONFORK gives a forked child zeros
 * (KEEPONFORK takes it back; memory unmapped and mapped again starts without it); unknown advice,
 * an unaligned start and MADV_REMOVE of private anonymous memory are EINVAL; an unmapped range is
 * ENOMEM. Prints results and errno names only: the same natively and in the LWK. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define T(x) do { errno = 0; long r_ = (long)(x); printf("%-52.52s r=%ld %s\n", #x, r_, r_ < 0 ? strerrorname_np(errno) : "-"); } while (0)

static char *a;

/* What a forked child reads in pages 0..3 of `a`. */
static void child_sees(const char *what) {
    pid_t p = fork();
    if (p == 0) {
        printf("%s: child sees %d %d %d %d\n", what, a[0], a[4096], a[8192], a[12288]);
        _exit(0);
    }
    int st;
    waitpid(p, &st, 0);
    printf("%s: child status %d\n", what, st);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    long pg = 4096;
    a = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(a, 9, 4 * pg);
    T(madvise(a, pg, MADV_WIPEONFORK));
    T(madvise(a + 2 * pg, pg + 1, MADV_WIPEONFORK));
    child_sees("wipe 0,2,3");
    printf("parent keeps %d %d %d\n", a[0], a[8192], a[12288]);
    T(madvise(a + 2 * pg, pg, MADV_KEEPONFORK));
    child_sees("keep 2");
    /* Unmapped and mapped again: the new mapping starts without the advice. */
    T(munmap(a + 3 * pg, pg));
    T(mmap(a + 3 * pg, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == a + 3 * pg);
    a[3 * pg] = 7;
    child_sees("remapped 3");
    T(madvise(a + 1, pg, MADV_DONTNEED));
    T(madvise(a, pg, 12345));
    T(madvise(a, 0, 12345));
    T(madvise(a, 0, MADV_DONTNEED));
    T(madvise(a, pg, MADV_HWPOISON + 100));
    T(madvise(a, pg, MADV_REMOVE));
    T(madvise(a, (size_t)-1, MADV_DONTNEED));
    T(madvise((void *)0x10000, pg, MADV_DONTNEED));
    T(madvise((void *)0x10000, pg, MADV_WIPEONFORK));
    /* A range that runs past the mapping's end: the mapped part gets the advice, then ENOMEM. */
    char *b = mmap(NULL, 3 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    T(munmap(b + 2 * pg, pg));
    b[0] = 5;
    T(madvise(b, 3 * pg, MADV_DONTNEED));
    printf("dropped page reads %d\n", b[0]);
    T(madvise(b, 2 * pg, MADV_DONTNEED));
    char *s = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    s[0] = 3;
    T(madvise(s, pg, MADV_WIPEONFORK));
    T(madvise(s, pg, MADV_REMOVE));
    printf("removed shared page reads %d\n", s[0]);
    T(madvise(a, pg, MADV_DONTFORK));
    T(madvise(a, pg, MADV_DOFORK));
    T(madvise(a, 4 * pg, MADV_NORMAL));
    T(madvise(a, 4 * pg, MADV_DONTNEED));
    child_sees("all dropped");
    return 0;
}
