/* Issue #16: pointers inside structs the kernel follows, and the VMM's fds in select sets.
 * Each line is "name: result"; the test compares them with what the LWK must answer.
 *   perf-stack:   a sample of user registers and stack (would copy a VMM thread's) -> refused
 *   perf-tid:     a plain TID sample -> opens
 *   zerocopy:     TCP_ZEROCOPY_RECEIVE with copybuf at a VMM address -> refused, nothing written
 *   filter-vmm:   SO_ATTACH_FILTER whose program lies outside the guest -> EFAULT
 *   filter-ok:    an accept-all filter in the guest's memory, then a datagram through it
 *   select-vmm:   select with a bit at the floor (the VMM's first fd) -> EBADF
 *   select-ok:    select on a readable pipe -> 1
 *   poll-vmm:     poll of the floor fd -> EBADF */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/perf_event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *res(long r) { return r < 0 ? strerror(errno) : "ok"; }

int main(void) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = 100000;
    a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
    a.sample_regs_user = 0x1c0;
    a.sample_stack_user = 512;
    a.disabled = 1;
    long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
    printf("perf-stack: %s\n", res(fd));
    a.sample_type = PERF_SAMPLE_TID;
    a.sample_regs_user = 0;
    a.sample_stack_user = 0;
    fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
    printf("perf-tid: %s\n", res(fd));

    /* A connected TCP pair on loopback. */
    int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    bind(l, (struct sockaddr *)&sa, sizeof sa);
    listen(l, 1);
    getsockname(l, (struct sockaddr *)&sa, &sl);
    connect(c, (struct sockaddr *)&sa, sizeof sa);
    int s = accept(l, NULL, NULL);
    if (write(c, "0123456789abcdef", 16) != 16)
        return 2;
    usleep(20000);
    /* struct tcp_zerocopy_receive: address, length, recv_skip_hint, inq, err, copybuf_address,
     * copybuf_len, flags, msg_control, msg_controllen, msg_flags, reserved. */
    uint64_t zc[10];
    memset(zc, 0, sizeof zc);
    zc[3] = 0x7e00009fe800ull; /* copybuf_address: above the guest's window */
    zc[4] = 4096;              /* copybuf_len (u32) */
    socklen_t zl = sizeof zc;
    long r = getsockopt(s, IPPROTO_TCP, TCP_ZEROCOPY_RECEIVE, zc, &zl);
    printf("zerocopy: %s\n", r < 0 ? strerror(errno) : "accepted");

    /* MPTCP_FULL_INFO (SOL_MPTCP 284, 4): struct mptcp_full_info's subflow_info and tcp_info
     * pointers, written by the kernel. Refused before any kernel sees it (a TCP socket will do). */
    uint64_t fi[8];
    memset(fi, 0, sizeof fi);
    fi[3] = 0x7e00000050e0ull; /* subflow_info: the LWK's IDT */
    fi[4] = 0x7e00000050e0ull; /* tcp_info */
    socklen_t fl = sizeof fi;
    r = getsockopt(s, 284, 4, fi, &fl);
    printf("mptcp-full-info: %s\n", r < 0 ? strerror(errno) : "accepted");

    int u1 = socket(AF_INET, SOCK_DGRAM, 0), u2 = socket(AF_INET, SOCK_DGRAM, 0);
    struct sock_fprog bad = {.len = 1, .filter = (struct sock_filter *)0x7e0000000000ull};
    r = setsockopt(u1, SOL_SOCKET, SO_ATTACH_FILTER, &bad, sizeof bad);
    printf("filter-vmm: %s\n", res(r));
    struct sock_filter accept_all[] = {{BPF_RET | BPF_K, 0, 0, 0xffff}};
    struct sock_fprog good = {.len = 1, .filter = accept_all};
    r = setsockopt(u1, SOL_SOCKET, SO_ATTACH_FILTER, &good, sizeof good);
    struct sockaddr_in ua = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t ul = sizeof ua;
    bind(u1, (struct sockaddr *)&ua, sizeof ua);
    getsockname(u1, (struct sockaddr *)&ua, &ul);
    sendto(u2, "ping", 4, 0, (struct sockaddr *)&ua, sizeof ua);
    char buf[8] = {0};
    long n = r < 0 ? -1 : recv(u1, buf, sizeof buf, 0);
    printf("filter-ok: %s %ld %s\n", res(r), n, buf);

    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    int floor = (int)rl.rlim_max; /* in the LWK the guest's hard limit is the floor */
    int words = floor / 64 + 1;
    unsigned long *set = calloc(words, 8);
    set[floor / 64] |= 1ul << (floor % 64);
    struct timeval tv = {0, 0};
    r = select(floor + 1, (fd_set *)set, NULL, NULL, &tv);
    printf("select-vmm: %s\n", res(r));
    int p[2];
    if (pipe(p) || write(p[1], "x", 1) != 1)
        return 3;
    fd_set rs;
    FD_ZERO(&rs);
    FD_SET(p[0], &rs);
    tv.tv_usec = 0;
    r = select(p[0] + 1, &rs, NULL, NULL, &tv);
    printf("select-ok: %ld %d\n", r, FD_ISSET(p[0], &rs));
    struct pollfd pf = {.fd = floor, .events = POLLIN};
    r = poll(&pf, 1, 0);
    printf("poll-vmm: %ld %s\n", r, pf.revents & POLLNVAL ? "nval" : pf.revents ? "ready" : "none");
    return 0;
}
