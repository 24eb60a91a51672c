/* Issue #16: mbind, which numpy's OpenBLAS makes on its buffers, was ENOSYS in the LWK (with a
 * note on stderr). It now sets the policy of the guest's pages and refuses a range outside the
 * guest's window (the LWK's own region: EFAULT, as for a range not mapped natively). */
#include <errno.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static void show(const char *what, long r) { printf("%-28s %ld %s\n", what, r, r ? (errno == EFAULT ? "EFAULT" : errno == EINVAL ? "EINVAL" : "other") : "ok"); }

int main(void) {
    char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned long node0 = 1;
    show("bind to node 0", syscall(SYS_mbind, p, 1 << 20, 2 /* MPOL_BIND */, &node0, 64, 0));
    p[0] = 1;
    show("preferred, move", syscall(SYS_mbind, p, 1 << 20, 1 /* MPOL_PREFERRED */, &node0, 64, 2 /* MF_MOVE */));
    show("default", syscall(SYS_mbind, p, 1 << 20, 0 /* MPOL_DEFAULT */, NULL, 0, 0));
    show("unaligned start", syscall(SYS_mbind, p + 1, 4096, 0, NULL, 0, 0));
    show("bad mode", syscall(SYS_mbind, p, 4096, 99, NULL, 0, 0));
    show("nothing mapped there", syscall(SYS_mbind, (void *)0x7e0000000000UL, 4096, 0, NULL, 0, 0));
    show("zero length", syscall(SYS_mbind, p, 0, 0, NULL, 0, 0));
    return 0;
}
