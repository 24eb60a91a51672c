/* Issue #16: io_uring entries whose VMM-facing fields the check missed. A vectorized SEND followed
 * iov_bases into VMM memory (the LWK's page tables were sent to a socket); an ACCEPT's socklen_t,
 * read again by the kernel when the connection came, let a peer's name be written at a VMM
 * address; read/write integrity attributes (attr_ptr) were read from VMM memory; EPOLL_CTL with
 * IOSQE_FIXED_FILE took the VMM's fds. Prints what the LWK answers; plain ACCEPT and READ work. */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

static int run(struct io_uring *ring) {
    struct io_uring_cqe *cqe;
    io_uring_submit(ring);
    if (io_uring_wait_cqe(ring, &cqe))
        return -9999;
    int res = cqe->res;
    io_uring_cqe_seen(ring, cqe);
    return res;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    struct io_uring ring;
    if (io_uring_queue_init(8, &ring, 0))
        return 1;
    const unsigned long vmm = 0x7e0000000000UL; /* the LWK's system page, above the window */

    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    static struct iovec iov[1];
    iov[0].iov_base = (void *)vmm;
    iov[0].iov_len = 64;
    struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
    io_uring_prep_send(sqe, sv[0], iov, 1, 0);
    sqe->ioprio = 1 << 5; /* IORING_SEND_VECTORIZED */
    printf("vectorized send of VMM memory: %d\n", run(&ring));

    int l = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    memcpy(a.sun_path, "\0multios-uringinner", 19);
    if (bind(l, (void *)&a, 2 + 19) || listen(l, 2))
        return 2;
    static socklen_t alen = 0;
    sqe = io_uring_get_sqe(&ring);
    io_uring_prep_accept(sqe, l, (struct sockaddr *)(vmm + 0x17f000), &alen, 0);
    printf("accept with an address: %d\n", run(&ring));
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    if (connect(c, (void *)&a, 2 + 19))
        return 3;
    sqe = io_uring_get_sqe(&ring);
    io_uring_prep_accept(sqe, l, NULL, NULL, 0);
    printf("accept without one: %s\n", run(&ring) >= 0 ? "a connection" : "failed");

    int f = open("/proc/self/exe", O_RDONLY);
    static char buf[16];
    sqe = io_uring_get_sqe(&ring);
    io_uring_prep_read(sqe, f, buf, sizeof buf, 0);
    memcpy((char *)sqe + 48, &vmm, 8);                          /* attr_ptr */
    unsigned long mask = 1;                                      /* IORING_RW_ATTR_FLAG_PI */
    memcpy((char *)sqe + 56, &mask, 8);
    printf("read with attributes at VMM memory: %d\n", run(&ring));
    sqe = io_uring_get_sqe(&ring);
    io_uring_prep_read(sqe, f, buf, sizeof buf, 0);
    printf("read without: %d\n", run(&ring));

    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl); /* in the LWK the guest's hard limit is the floor */
    struct epoll_event ev = {.events = EPOLLIN};
    sqe = io_uring_get_sqe(&ring);
    io_uring_prep_epoll_ctl(sqe, (int)rl.rlim_max, sv[1], EPOLL_CTL_ADD, &ev);
    sqe->flags |= IOSQE_FIXED_FILE;
    printf("epoll_ctl on the floor fd with IOSQE_FIXED_FILE: %d\n", run(&ring));
    return 0;
}
