/* A system call the LWK has no layout for (io_setup, Linux AIO; io_uring_setup was this example
 * until issue #14 served io_uring): natively it works or fails with its own errno; in the LWK it
 * must fail with ENOSYS and a report naming it. */
#include <errno.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
    unsigned long ctx = 0;
    long r = syscall(SYS_io_setup, 1, &ctx);
    printf("io_setup: %s\n", r >= 0 ? "ok" : errno == ENOSYS ? "ENOSYS" : "other error");
    if (r >= 0) syscall(SYS_io_destroy, ctx);
    return 0;
}
