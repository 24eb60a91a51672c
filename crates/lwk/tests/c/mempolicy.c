/* Issue #15: the per-thread NUMA memory policy hwloc sets and reads in every Open MPI start-up
 * (set_mempolicy, get_mempolicy), made by raw system calls (no libnuma). Prints results and
 * errnos, the same natively and in the LWK on a machine with one NUMA node. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MPOL_DEFAULT 0
#define MPOL_PREFERRED 1
#define MPOL_BIND 2
#define MPOL_INTERLEAVE 3
#define MPOL_PREFERRED_MANY 5

static void show(const char *what, long r) {
    if (r < 0)
        printf("%s: -1 %s\n", what, strerror(errno));
    else
        printf("%s: %ld\n", what, r);
}

static long get(int *mode, unsigned long *mask, unsigned long maxnode) {
    return syscall(SYS_get_mempolicy, mode, mask, maxnode, NULL, 0UL);
}

static void *other_thread(void *arg) {
    (void)arg;
    int mode = -1;
    unsigned long mask[16] = {0};
    show("thread: get_mempolicy", get(&mode, mask, 1025));
    printf("thread: mode %d mask %lx (inherited from its creator)\n", mode, mask[0]);
    return NULL;
}

int main(void) {
    int mode = -1;
    unsigned long mask[16] = {0};
    show("get_mempolicy", get(&mode, mask, 1025));
    printf("mode %d mask %lx\n", mode, mask[0]);
    /* hwloc's probe: MPOL_PREFERRED_MANY with node 0, then back to the default. */
    unsigned long node0[16] = {1};
    show("set_mempolicy PREFERRED_MANY {0}", syscall(SYS_set_mempolicy, MPOL_PREFERRED_MANY, node0, 1024UL));
    show("set_mempolicy DEFAULT", syscall(SYS_set_mempolicy, MPOL_DEFAULT, node0, 1025UL));
    show("set_mempolicy BIND {0}", syscall(SYS_set_mempolicy, MPOL_BIND, node0, 65UL));
    show("get_mempolicy", get(&mode, mask, 1025));
    printf("mode %d mask %lx\n", mode, mask[0]);
    pthread_t t;
    pthread_create(&t, NULL, other_thread, NULL);
    pthread_join(t, NULL);
    /* Errors: a mode Linux does not have, a node this machine does not have, no nodes at all. */
    unsigned long node60[1] = {1UL << 60};
    show("set_mempolicy mode 99", syscall(SYS_set_mempolicy, 99, node0, 65UL));
    show("set_mempolicy BIND {60}", syscall(SYS_set_mempolicy, MPOL_BIND, node60, 65UL));
    show("set_mempolicy BIND {}", syscall(SYS_set_mempolicy, MPOL_BIND, NULL, 0UL));
    show("set_mempolicy bad mask", syscall(SYS_set_mempolicy, MPOL_BIND, (void *)8, 65UL));
    show("get_mempolicy bad mode", syscall(SYS_get_mempolicy, (void *)8, mask, 1025UL, NULL, 0UL));
    /* Linux reads and writes maxnode - 1 bits: a 16-long mask with maxnode 1025 may end right
     * before an inaccessible page. */
    long page = sysconf(_SC_PAGESIZE);
    char *two = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (two == MAP_FAILED || mprotect(two + page, page, PROT_NONE) != 0) {
        perror("mmap/mprotect");
        return 1;
    }
    unsigned long *edge = (unsigned long *)(two + page) - 16;
    show("get_mempolicy mask at a page's end", get(&mode, edge, 1025));
    printf("mode %d mask %lx\n", mode, edge[0]);
    edge[0] = 1;
    show("set_mempolicy mask at a page's end", syscall(SYS_set_mempolicy, MPOL_PREFERRED, edge, 1025UL));
    show("set_mempolicy DEFAULT", syscall(SYS_set_mempolicy, MPOL_DEFAULT, NULL, 0UL));
    return 0;
}
