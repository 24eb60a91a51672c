/* Issue #16: mseal(2) and what a seal refuses (munmap, mprotect, mremap, mmap(MAP_FIXED),
 * discarding madvise on read-only anonymous memory, brk shrinking, shmdt), across fork and exec.
 * Every result is printed; natively and in the LWK the output must be the same. Before the fix
 * mseal was ENOSYS in the LWK and every later call succeeded. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define PG 4096L
static long mseal_(void *a, unsigned long len, unsigned long flags) { return syscall(462, a, len, flags); }
#define P(name, expr)                                                                    \
    do {                                                                                 \
        errno = 0;                                                                       \
        long _r = (long)(expr);                                                          \
        printf("%-40s %s\n", name, _r < 0 ? strerror(errno) : _r == 0 ? "0" : "ok");     \
        fflush(stdout);                                                                  \
    } while (0)

static char *map(long pages, int prot) {
    return mmap(0, pages * PG, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

int main(int argc, char **argv) {
    if (argc > 1) {
        /* After exec: the address sealed before is free to map again. */
        void *at = (void *)strtoul(argv[1], 0, 16);
        void *m = mmap(at, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        P("after exec: mmap FIXED where sealed", m == at ? 0 : -1);
        P("after exec: munmap", munmap(at, PG));
        return 0;
    }
    char *m = map(4, PROT_READ | PROT_WRITE);
    P("mseal flags 1", mseal_(m, PG, 1));
    P("mseal unaligned", mseal_(m + 1, PG, 0));
    P("mseal len 0", mseal_(m, 0, 0));
    P("mseal overflowing len", mseal_(m, -1UL, 0));
    munmap(m + 3 * PG, PG);
    P("mseal over a hole", mseal_(m + 2 * PG, 2 * PG, 0));
    P("munmap after the failed mseal", munmap(m + 2 * PG, PG));
    P("mseal first page (len 1)", mseal_(m, 1, 0));
    P("mseal again", mseal_(m, PG, 0));
    P("munmap sealed", munmap(m, PG));
    P("munmap range with a sealed page", munmap(m, 2 * PG));
    m[PG] = 7;
    P("the unsealed page is still mapped", m[PG] == 7 ? 0 : -1);
    P("munmap unsealed neighbour", munmap(m + PG, PG));
    P("mprotect sealed", mprotect(m, PG, PROT_READ));
    P("mprotect sealed, same protection", mprotect(m, PG, PROT_READ | PROT_WRITE));
    P("mprotect len 0 at sealed", mprotect(m, 0, PROT_READ));
    P("pkey_mprotect sealed", syscall(SYS_pkey_mprotect, m, PG, PROT_READ, -1));
    P("mremap sealed, grow", mremap(m, PG, 2 * PG, 0) == MAP_FAILED ? -1 : 0);
    P("mremap sealed, shrink", mremap(m, PG, PG / 2, 0) == MAP_FAILED ? -1 : 0);
    P("mremap sealed, move", mremap(m, PG, 4 * PG, MREMAP_MAYMOVE) == MAP_FAILED ? -1 : 0);
    char *o = map(1, PROT_READ | PROT_WRITE);
    P("mremap FIXED onto sealed",
      mremap(o, PG, PG, MREMAP_MAYMOVE | MREMAP_FIXED, m) == MAP_FAILED ? -1 : 0);
    P("mmap FIXED over sealed",
      mmap(m, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED ? -1 : 0);
    P("mmap FIXED_NOREPLACE over sealed",
      mmap(m, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) == MAP_FAILED ? -1 : 0);
    char *h = mmap(m, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    P("mmap hint at sealed goes elsewhere", h != MAP_FAILED && h != m ? 0 : -1);
    m[0] = 42;
    P("madvise DONTNEED, sealed writable", madvise(m, PG, MADV_DONTNEED));
    P("the page reads zero", m[0] == 0 ? 0 : -1);

    char *r = map(2, PROT_READ | PROT_WRITE);
    r[0] = 5;
    mprotect(r, 2 * PG, PROT_READ);
    P("mseal read-only", mseal_(r, 2 * PG, 0));
    P("madvise DONTNEED, sealed read-only", madvise(r, PG, MADV_DONTNEED));
    P("madvise FREE, sealed read-only", madvise(r, PG, MADV_FREE));
    P("madvise WIPEONFORK, sealed read-only", madvise(r, PG, MADV_WIPEONFORK));
    P("madvise DONTFORK, sealed read-only", madvise(r, PG, MADV_DONTFORK));
    P("madvise WILLNEED, sealed read-only", madvise(r, PG, MADV_WILLNEED));
    P("madvise COLD, sealed read-only", madvise(r, PG, MADV_COLD));
    P("the read-only page kept its data", r[0] == 5 ? 0 : -1);

    /* The break: shrinking over a sealed heap page is refused (brk returns the old break). */
    char *b0 = sbrk(0);
    sbrk(4 * PG);
    char *b1 = sbrk(0);
    char *hp = (char *)(((uintptr_t)b0 + PG - 1) & ~(PG - 1));
    P("mseal heap page", mseal_(hp, PG, 0));
    P("brk shrink over it refused", (char *)syscall(SYS_brk, b0) == b1 ? 0 : -1);

    /* SysV shared memory: shmdt of a sealed attachment is 0 and the attachment stays. */
    int id = shmget(IPC_PRIVATE, PG, IPC_CREAT | 0600);
    char *s = shmat(id, 0, 0);
    shmctl(id, IPC_RMID, 0);
    s[0] = 9;
    P("mseal shm attachment", mseal_(s, PG, 0));
    P("shmdt sealed", shmdt(s));
    P("the attachment stays", s[0] == 9 ? 0 : -1);

    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        P("child: munmap sealed", munmap(m, PG));
        P("child: mprotect sealed", mprotect(m, PG, PROT_NONE));
        _exit(0);
    }
    int st = 0;
    waitpid(c, &st, 0);
    char at[32];
    snprintf(at, sizeof at, "%lx", (unsigned long)m);
    execl("/proc/self/exe", argv[0], at, (char *)0);
    P("execl", -1);
    return 1;
}
