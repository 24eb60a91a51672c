/* A system call the LWK has no layout for (io_uring_setup): natively it works or fails with its
 * own errno; in the LWK it must fail with ENOSYS and a report naming it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
    char params[120];
    memset(params, 0, sizeof params);
    long r = syscall(SYS_io_uring_setup, 1, params);
    printf("io_uring_setup: %s\n", r >= 0 ? "ok" : errno == ENOSYS ? "ENOSYS" : "other error");
    return 0;
}
