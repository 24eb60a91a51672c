/* Delegated socket and event calls: socketpair, sendmsg/recvmsg with an iovec, epoll, poll. */
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

int main(void) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) { perror("socketpair"); return 1; }
    struct iovec out[2] = {{"hello ", 6}, {"sockets", 7}};
    struct msghdr m = {0};
    m.msg_iov = out;
    m.msg_iovlen = 2;
    printf("sendmsg %zd\n", sendmsg(sv[0], &m, 0));
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 7}, got[4];
    epoll_ctl(ep, EPOLL_CTL_ADD, sv[1], &ev);
    int n = epoll_wait(ep, got, 4, 1000);
    printf("epoll %d tag %u\n", n, n > 0 ? got[0].data.u32 : 0);
    char a[8] = {0}, b[8] = {0};
    struct iovec in[2] = {{a, 6}, {b, 7}};
    struct msghdr r = {0};
    r.msg_iov = in;
    r.msg_iovlen = 2;
    printf("recvmsg %zd: [%s][%s]\n", recvmsg(sv[1], &r, 0), a, b);
    struct pollfd p = {.fd = sv[1], .events = POLLIN};
    printf("poll %d\n", poll(&p, 1, 0));
    struct msghdr bad = {0};
    struct iovec evil = {(void *)0x7e0000000000UL, 64};
    bad.msg_iov = &evil;
    bad.msg_iovlen = 1;
    printf("sendmsg from a VMM address: %zd\n", sendmsg(sv[0], &bad, 0) < 0 ? -1L : 0L);
    close(ep);
    close(sv[0]);
    close(sv[1]);
    return 0;
}
