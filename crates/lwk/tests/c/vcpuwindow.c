/* Issue #16: a new thread makes the VMM create a vCPU whose fd appears, for a moment, at the lowest
 * free number N of the guest's range before the VMM moves it above the floor (the test widens that
 * moment with MULTIOS_LWK_TEST_FD_RACE_MS). Meanwhile other threads name N: sendmsg(SCM_RIGHTS),
 * ioctl(KVM_GET_REGS), mmap and io_uring's CLOSE. None may reach the vCPU. Also io_uring CLOSE:
 * served alone, refused (EINVAL) in a link chain.
 * Prints one line a check; natively the vCPU part finds nothing to steal either. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

static int sv[2], N;
static atomic_int stop, stolen, ioctl_ok, mapped;

static int send_fd(int fd) {
    char c = 'x';
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(int))];
    } u;
    struct iovec io = {&c, 1};
    struct msghdr m = {0};
    m.msg_iov = &io;
    m.msg_iovlen = 1;
    m.msg_control = u.b;
    m.msg_controllen = sizeof u.b;
    struct cmsghdr *h = CMSG_FIRSTHDR(&m);
    h->cmsg_level = SOL_SOCKET;
    h->cmsg_type = SCM_RIGHTS;
    h->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(h), &fd, sizeof(int));
    return (int)sendmsg(sv[0], &m, MSG_DONTWAIT);
}

static int recv_fd(void) {
    char c;
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(int))];
    } v;
    struct iovec io = {&c, 1};
    struct msghdr r = {0};
    r.msg_iov = &io;
    r.msg_iovlen = 1;
    r.msg_control = v.b;
    r.msg_controllen = sizeof v.b;
    if (recvmsg(sv[1], &r, 0) != 1 || !CMSG_FIRSTHDR(&r))
        return -1;
    int fd;
    memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&r)), sizeof fd);
    return fd;
}

static int is_kvm(int fd) {
    char p[64], l[128] = {0};
    snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
    if (readlink(p, l, sizeof l - 1) < 0)
        return 0;
    return strstr(l, "kvm") != NULL;
}

static void *sender(void *a) {
    (void)a;
    while (!stop) {
        if (send_fd(N) == 1) {
            int fd = recv_fd();
            if (fd >= 0) {
                if (is_kvm(fd))
                    stolen++;
                close(fd);
            }
        }
    }
    return NULL;
}

static void *poker(void *a) {
    (void)a;
    while (!stop) {
        char regs[256];
        if (ioctl(N, 0x8090ae81 /* KVM_GET_REGS */, regs) == 0)
            ioctl_ok++;
        void *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, N, 0);
        if (p != MAP_FAILED) {
            mapped++;
            munmap(p, 4096);
        }
    }
    return NULL;
}

static void *idle(void *a) {
    return a;
}

static int close_cqe(struct io_uring *r, int fd, int linked) {
    struct io_uring_sqe *s;
    if (linked) {
        s = io_uring_get_sqe(r);
        io_uring_prep_nop(s);
        s->flags |= IOSQE_IO_LINK;
        s->user_data = 1;
    }
    s = io_uring_get_sqe(r);
    io_uring_prep_close(s, fd);
    s->user_data = 2;
    io_uring_submit(r);
    int res = 0;
    for (int k = 0; k < 1 + linked; k++) {
        struct io_uring_cqe *c;
        if (io_uring_wait_cqe(r, &c) != 0)
            return -999;
        if (c->user_data == 2)
            res = c->res;
        io_uring_cqe_seen(r, c);
    }
    return res;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return 2;
    N = dup(0);
    close(N);
    pthread_t s, p;
    pthread_create(&s, NULL, sender, NULL);
    pthread_create(&p, NULL, poker, NULL);
    for (int i = 0; i < 6; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, idle, NULL) == 0)
            pthread_join(t, NULL);
    }
    stop = 1;
    pthread_join(s, NULL);
    pthread_join(p, NULL);
    printf("vCPU fds received through SCM_RIGHTS: %d\n", stolen);
    printf("KVM ioctls answered: %d\n", ioctl_ok);
    printf("mmaps of the number: %d\n", mapped);

    struct io_uring r;
    if (io_uring_queue_init(8, &r, 0) != 0)
        return 3;
    int a = dup(1), b = dup(1);
    printf("io_uring close alone: %d\n", close_cqe(&r, a, 0));
    printf("closed: %s\n", fcntl(a, F_GETFD) < 0 ? "yes" : "no");
    printf("io_uring close of a closed fd: %d\n", close_cqe(&r, a, 0));
    int linked = close_cqe(&r, b, 1);
    printf("io_uring close in a chain refused or done: %s\n", linked == -22 || linked == 0 ? "yes" : "no");
    return 0;
}
