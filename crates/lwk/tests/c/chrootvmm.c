/* Issue #16 (twenty-first session): a guest's chroot is its VMM's, so files the VMM opened later by
 * absolute path were files the guest made. Usage: chrootvmm NEWROOT (an empty directory).
 * 1. sysfs is gone after the chroot: perf_event_open of a uprobe (its config1 a path the kernel
 *    reads) was allowed, and an int3 landed in the VMM's own code. Must be refused (EACCES).
 * 2. NEWROOT/proc/thread-self/schedstat is a FIFO: the VMM opened it for the new thread's CPU
 *    time, holding its fd lock, and hung for ever. The thread must start and be joined. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static void *body(void *x) { return x; }

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc < 2)
        return 2;
    char p[512];
    snprintf(p, sizeof p, "%s/proc", argv[1]);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/proc/thread-self", argv[1]);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/proc/thread-self/schedstat", argv[1]);
    mkfifo(p, 0600);
    FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "r");
    int type = -1;
    if (!f || fscanf(f, "%d", &type) != 1) {
        printf("no uprobe PMU\n");
        return 1;
    }
    fclose(f);
    if (chroot(argv[1]) != 0 || chdir("/") != 0) {
        perror("chroot");
        return 1;
    }
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = type;
    static const char path[] = "/bin/true";
    a.config1 = (uint64_t)(uintptr_t)path;
    a.config2 = 0x10;
    long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
    printf("uprobe after chroot: %s\n", fd < 0 ? strerrorname_np(errno) : "opened");
    pthread_t t;
    if (pthread_create(&t, NULL, body, NULL) != 0 || pthread_join(t, NULL) != 0) {
        printf("thread failed\n");
        return 1;
    }
    printf("thread joined\n");
    return 0;
}
