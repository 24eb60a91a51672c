/* RLIMIT_AS (reported 2026-11-28): `ulimit -v` was applied to the VMM, whose 4 GiB window then
 * left no room, so every later fork failed ("KVM_CREATE_VCPU: Cannot allocate memory") and a
 * mapping over the limit was not refused. The limit is the guest's: a mapping over it fails with
 * ENOMEM, one under it works, the limit reads back and is inherited by a forked child, and fork
 * and exec still work. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    struct rlimit r = {256 << 20, RLIM_INFINITY};
    if (setrlimit(RLIMIT_AS, &r) != 0) {
        printf("setrlimit: %s\n", strerror(errno));
        return 1;
    }
    getrlimit(RLIMIT_AS, &r);
    printf("limit %lu MiB, hard %s\n", (unsigned long)(r.rlim_cur >> 20), r.rlim_max == RLIM_INFINITY ? "unlimited" : "set");
    void *big = mmap(0, 512 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("512 MiB: %s\n", big == MAP_FAILED ? strerror(errno) : "mapped");
    void *small = mmap(0, 16 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("16 MiB: %s\n", small == MAP_FAILED ? strerror(errno) : "mapped");
    void *grown = small == MAP_FAILED ? MAP_FAILED : mremap(small, 16 << 20, 400 << 20, MREMAP_MAYMOVE);
    printf("grown to 400 MiB: %s\n", grown == MAP_FAILED ? strerror(errno) : "mapped");
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        struct rlimit k;
        getrlimit(RLIMIT_AS, &k);
        printf("child: limit %lu MiB\n", (unsigned long)(k.rlim_cur >> 20));
        fflush(stdout);
        execl("/bin/true", "true", (char *)NULL);
        _exit(99);
    }
    int st;
    waitpid(c, &st, 0);
    printf("child exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 0;
}
