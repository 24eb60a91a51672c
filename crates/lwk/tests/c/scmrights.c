/* Issue #16 (reported 2026-11-28): a guest passing fds to itself over a UNIX socket (SCM_RIGHTS)
 * must not get the VMM's fds at or above the floor (KVM's, a vCPU's whose mmap is the live
 * kvm_run, the procfs directory, the eventfd and signalfd). Each fd from the hard RLIMIT_NOFILE
 * (the floor) up is sent, with sendmsg, alone and behind an SCM_CREDENTIALS message; every send
 * must fail with EBADF, as it does natively for an fd the process does not have. The guest's own
 * fds still travel: a pipe's write end sent and written through arrives. Prints
 * "scmrights: N refused, 0 passed" and exits 0 when all hold. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

static int send_fd(int sock, int fd, int with_creds) {
    char data = 'x';
    struct iovec iov = {&data, 1};
    union {
        char buf[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof u);
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf};
    struct cmsghdr *c = (struct cmsghdr *)u.buf;
    size_t len = 0;
    if (with_creds) {
        struct ucred cr = {getpid(), getuid(), getgid()};
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_CREDENTIALS;
        c->cmsg_len = CMSG_LEN(sizeof cr);
        memcpy(CMSG_DATA(c), &cr, sizeof cr);
        len += CMSG_SPACE(sizeof cr);
        c = (struct cmsghdr *)(u.buf + len);
    }
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof fd);
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    len += CMSG_SPACE(sizeof fd);
    m.msg_controllen = len;
    return sendmsg(sock, &m, 0) < 0 ? -errno : 0;
}

static int recv_fd(int sock) {
    char data;
    struct iovec iov = {&data, 1};
    union {
        char buf[256];
        struct cmsghdr align;
    } u;
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    if (recvmsg(sock, &m, 0) < 0)
        return -errno;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            int fd;
            memcpy(&fd, CMSG_DATA(c), sizeof fd);
            return fd;
        }
    return -ENOENT;
}

int main(void) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        perror("socketpair");
        return 2;
    }
    int one = 1;
    setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &one, sizeof one);
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    int floor = (int)rl.rlim_max, refused = 0, passed = 0;
    for (int fd = floor; fd < floor + 16; fd++)
        for (int creds = 0; creds < 2; creds++) {
            int r = send_fd(sv[0], fd, creds);
            if (r == -EBADF) {
                refused++;
                continue;
            }
            passed++;
            int got = r == 0 ? recv_fd(sv[1]) : r;
            char link[256] = "?";
            char path[64];
            snprintf(path, sizeof path, "/proc/self/fd/%d", got);
            ssize_t n = readlink(path, link, sizeof link - 1);
            link[n > 0 ? n : 1] = 0;
            printf("PASSED fd %d (creds %d): send %d, received %d -> %s\n", fd, creds, r, got, link);
        }
    /* The guest's own fd still travels. */
    int p[2];
    if (pipe(p) != 0 || send_fd(sv[0], p[1], 1) != 0) {
        printf("FAILED: sending the guest's own pipe: %s\n", strerror(errno));
        return 1;
    }
    int w = recv_fd(sv[1]);
    if (w < 0 || write(w, "ok", 2) != 2) {
        printf("FAILED: the received pipe end (%d)\n", w);
        return 1;
    }
    char b[3] = {0};
    if (read(p[0], b, 2) != 2 || strcmp(b, "ok") != 0) {
        printf("FAILED: read back %s\n", b);
        return 1;
    }
    printf("own pipe end passed: ok\n");
    printf("scmrights: %d refused, %d passed\n", refused, passed);
    return passed == 0 ? 0 : 1;
}
