/* A file mapping's page past the end of its file (reported 2026-11-28): natively SIGBUS with
 * BUS_ADRERR, which a handler can recover from; in the LWK KVM_RUN failed with EFAULT and the VMM
 * stopped ("KVM_RUN failed: Bad address"). Modes: 0 a private read-only mapping read past the end,
 * 1 a shared one, 2 a shared one whose file is truncated under it (then grown again: the page
 * reads as zero), "die" the read without a handler (the program dies of SIGBUS). The handler
 * prints the signal, the code and the page of the address (KVM does not give the exact byte). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static sigjmp_buf jb;
static char *base;

static void on_bus(int s, siginfo_t *si, void *uc) {
    (void)uc;
    printf("signal %d code %d page %ld\n", s, si->si_code, (long)(((char *)si->si_addr - base) / 4096));
    fflush(stdout);
    siglongjmp(jb, 1);
}

int main(int argc, char **argv) {
    char path[] = "/tmp/multios-pasteof-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || ftruncate(fd, 10000) != 0)
        return 2;
    unlink(path);
    int die = strcmp(argv[1], "die") == 0, mode = die ? 0 : atoi(argv[1]);
    if (!die) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_bus;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGBUS, &sa, 0);
    }
    int shared = mode != 0;
    base = mmap(0, 16384, shared ? PROT_READ | PROT_WRITE : PROT_READ, shared ? MAP_SHARED : MAP_PRIVATE, fd, 0);
    if (base == MAP_FAILED)
        return 3;
    volatile char *p = base;
    long at = 12300;
    if (mode == 2) {
        p[5] = 1;
        if (ftruncate(fd, 0) != 0)
            return 4;
        at = 5;
    }
    if (sigsetjmp(jb, 1) == 0)
        printf("read %d\n", p[at]);
    else
        printf("recovered\n");
    if (mode == 2) {
        if (ftruncate(fd, 10000) != 0)
            return 5;
        printf("after regrowing %d\n", p[5]);
    }
    fflush(stdout);
    return 0;
}
