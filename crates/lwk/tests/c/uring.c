/* Issue #14: liburing programs — the rings are the kernel's, shared with the program. Usage:
 * uring DIR [refused]. Plain: reads and writes (plain, vectored, fixed buffers, fixed files), a
 * linked write→fsync→read chain, a timeout, poll on a pipe, an eventfd notified of completions,
 * a batch of 64 writes checked byte by byte, buffers the kernel may not use (EFAULT), the probe.
 * "refused": what the LWK refuses (SQPOLL, OPENAT in a link chain, OPENAT of a VMM's procfs
 * file), printing the errors. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static struct io_uring ring;

/* Submits what is queued and prints each completion (in user_data order of arrival). */
static void reap(const char *what, int n) {
    int s = io_uring_submit_and_wait(&ring, n);
    printf("%s: submitted %d\n", what, s);
    for (int i = 0; i < n; i++) {
        struct io_uring_cqe *c;
        if (io_uring_wait_cqe(&ring, &c) != 0) {
            printf("  wait failed\n");
            return;
        }
        printf("  ud %llu res %d\n", (unsigned long long)c->user_data, c->res);
        io_uring_cqe_seen(&ring, c);
    }
}

static struct io_uring_sqe *sqe(unsigned long long ud) {
    struct io_uring_sqe *s = io_uring_get_sqe(&ring);
    s->user_data = ud;
    return s;
}

/* A ring on memory the program gives (IORING_SETUP_NO_MMAP, Linux 6.5; the 6.1 headers call
 * user_addr resv2), driven with raw system calls: one NOP. */
static void no_mmap_ring(void) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    char *rings = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    char *sqes = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    p.flags = 1u << 14;
    p.cq_off.resv2 = (unsigned long)rings;
    p.sq_off.resv2 = (unsigned long)sqes;
    int fd = (int)syscall(__NR_io_uring_setup, 8, &p);
    if (fd < 0) {
        printf("NO_MMAP ring: %s\n", strerror(errno));
        return;
    }
    struct io_uring_sqe *e = (struct io_uring_sqe *)sqes;
    memset(e, 0, sizeof *e);
    e->opcode = IORING_OP_NOP;
    e->user_data = 5;
    ((unsigned *)(rings + p.sq_off.array))[0] = 0;
    __atomic_store_n((unsigned *)(rings + p.sq_off.tail), 1, __ATOMIC_RELEASE);
    long r = syscall(__NR_io_uring_enter, fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0);
    struct io_uring_cqe *c = (struct io_uring_cqe *)(rings + p.cq_off.cqes);
    printf("NO_MMAP ring: enter %ld, cq tail %u, ud %llu res %d, mmap of its SQ ring: %s\n", r,
           *(unsigned *)(rings + p.cq_off.tail), (unsigned long long)c->user_data, c->res,
           mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, IORING_OFF_SQ_RING) == MAP_FAILED ? strerror(errno) : "mapped");
    close(fd);
}

/* A ring one task must drive (SINGLE_ISSUER | DEFER_TASKRUN): its completions are run only when
 * that task waits for them. In the LWK it is driven from the guest thread's own vCPU thread. */
static void single_issuer_ring(const char *path) {
    struct io_uring r;
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    int e = io_uring_queue_init_params(8, &r, &p);
    if (e) {
        printf("SINGLE_ISSUER|DEFER_TASKRUN ring: %s\n", strerror(-e));
        return;
    }
    int fd = open(path, O_RDONLY);
    char b[8] = {0};
    struct io_uring_sqe *s = io_uring_get_sqe(&r);
    io_uring_prep_read(s, fd, b, 7, 0);
    int sub = io_uring_submit_and_wait(&r, 1);
    struct io_uring_cqe *c;
    int w = io_uring_wait_cqe(&r, &c);
    printf("SINGLE_ISSUER|DEFER_TASKRUN ring: submitted %d, wait %d, res %d\n", sub, w, w ? 0 : c->res);
    close(fd);
    io_uring_queue_exit(&r);
}

static int refused(void) {
    struct io_uring r2;
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    p.flags = IORING_SETUP_SQPOLL;
    int e = io_uring_queue_init_params(8, &r2, &p);
    printf("SQPOLL setup: %d (%s)\n", e, e ? strerror(-e) : "ok");
    if (e == 0) io_uring_queue_exit(&r2);
    if (io_uring_queue_init(8, &ring, 0)) return 1;
    struct io_uring_sqe *s = sqe(1);
    io_uring_prep_nop(s);
    s->flags |= IOSQE_IO_LINK;
    io_uring_prep_openat(sqe(2), AT_FDCWD, "/etc/hostname", O_RDONLY, 0);
    reap("nop linked to openat", 2);
    io_uring_prep_openat(sqe(3), AT_FDCWD, "/proc/self/mem", O_RDONLY, 0);
    reap("openat /proc/self/mem", 1);
    io_uring_queue_exit(&ring);
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc > 2 && strcmp(argv[2], "refused") == 0) return refused();
    char path[512];
    snprintf(path, sizeof path, "%s/uring.dat", argc > 1 ? argv[1] : ".");
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || io_uring_queue_init(16, &ring, 0) != 0) return 2;
    printf("features: single mmap %d, nodrop %d\n", !!(ring.features & IORING_FEAT_SINGLE_MMAP),
           !!(ring.features & IORING_FEAT_NODROP));

    static char a[64] = "written by IORING_OP_WRITE\n", b[64];
    io_uring_prep_write(sqe(1), fd, a, strlen(a), 0);
    reap("write", 1);
    io_uring_prep_read(sqe(2), fd, b, sizeof b, 0);
    reap("read", 1);
    printf("  read back: %s", b);

    char v1[8] = "vector ", v2[16] = "writes\n", r1[8] = {0}, r2[16] = {0};
    struct iovec wv[2] = {{v1, 7}, {v2, 7}}, rv[2] = {{r1, 7}, {r2, 7}};
    io_uring_prep_writev(sqe(3), fd, wv, 2, 100);
    reap("writev", 1);
    io_uring_prep_readv(sqe(4), fd, rv, 2, 100);
    reap("readv", 1);
    printf("  readv: %s%s", r1, r2);

    /* Registered buffers and files. */
    char *fixed = aligned_alloc(4096, 8192);
    memset(fixed, 0, 8192);
    strcpy(fixed, "fixed buffer bytes\n");
    struct iovec reg = {fixed, 8192};
    struct io_uring_sqe *s;
    printf("register buffers: %d\n", io_uring_register_buffers(&ring, &reg, 1));
    printf("register files: %d\n", io_uring_register_files(&ring, &fd, 1));
    s = sqe(5);
    io_uring_prep_write_fixed(s, 0, fixed, 19, 200, 0);
    io_uring_sqe_set_flags(s, IOSQE_FIXED_FILE);
    reap("write_fixed via fixed file", 1);
    io_uring_prep_read_fixed(sqe(6), fd, fixed + 4096, 19, 200, 0);
    reap("read_fixed", 1);
    printf("  read_fixed: %s", fixed + 4096);

    /* A linked chain: write, fsync, read. */
    char c1[32] = "linked chain\n", c2[32] = {0};
    s = sqe(7);
    io_uring_prep_write(s, fd, c1, 13, 300);
    s->flags |= IOSQE_IO_LINK;
    s = sqe(8);
    io_uring_prep_fsync(s, fd, 0);
    s->flags |= IOSQE_IO_LINK;
    io_uring_prep_read(sqe(9), fd, c2, 13, 300);
    reap("link write->fsync->read", 3);
    printf("  chain read: %s", c2);

    /* A timeout and poll on a pipe. */
    struct __kernel_timespec ts = {0, 2000000};
    io_uring_prep_timeout(sqe(10), &ts, 0, 0);
    reap("timeout 2 ms", 1);
    int pfd[2];
    if (pipe(pfd)) return 3;
    io_uring_prep_poll_add(sqe(11), pfd[0], POLLIN);
    io_uring_submit(&ring);
    write(pfd[1], "x", 1);
    reap("poll after a pipe write", 1);

    /* An eventfd counts completions. */
    int efd = eventfd(0, 0);
    printf("register eventfd: %d\n", io_uring_register_eventfd(&ring, efd));
    io_uring_prep_nop(sqe(12));
    reap("nop", 1);
    unsigned long long cnt = 0;
    read(efd, &cnt, 8);
    printf("  eventfd counted %llu\n", cnt);

    /* A batch of 64 writes of 4 KiB, then the file checked byte by byte. */
    char *big = malloc(64 * 4096);
    for (int i = 0; i < 64 * 4096; i++) big[i] = (char)(i * 13 + i / 4096);
    int bfd = open(path, O_RDWR | O_TRUNC);
    for (int k = 0; k < 64; k++) {
        struct io_uring_sqe *w = io_uring_get_sqe(&ring);
        if (!w) {
            io_uring_submit(&ring);
            w = io_uring_get_sqe(&ring);
        }
        io_uring_prep_write(w, bfd, big + 4096 * k, 4096, 4096 * k);
        w->user_data = 100 + k;
    }
    io_uring_submit(&ring);
    int good = 0;
    for (int k = 0; k < 64; k++) {
        struct io_uring_cqe *c;
        io_uring_wait_cqe(&ring, &c);
        good += c->res == 4096;
        io_uring_cqe_seen(&ring, c);
    }
    char *back = malloc(64 * 4096);
    printf("batch: %d of 64 writes complete, file %s\n", good,
           pread(bfd, back, 64 * 4096, 0) == 64 * 4096 && memcmp(back, big, 64 * 4096) == 0 ? "identical" : "differs");

    /* Buffers the kernel may not write: a read-only page, an address mapped nowhere. */
    char *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    io_uring_prep_read(sqe(13), fd, ro, 16, 0);
    io_uring_prep_read(sqe(14), fd, (void *)0x7e0000000000ul, 16, 0);
    reap("reads into a read-only page and unmapped memory", 2);

    /* The iovec array is the kernel's once the entry is submitted: changing it afterwards (the
     * read waits for the pipe) does not move the data. */
    char ia[16] = {0}, ib[16] = {0};
    struct iovec iv = {ia, 8};
    int qfd[2];
    if (pipe(qfd)) return 4;
    io_uring_prep_readv(sqe(15), qfd[0], &iv, 1, -1);
    io_uring_submit(&ring);
    iv.iov_base = ib;
    write(qfd[1], "payload!", 8);
    reap("readv of a pipe, iovec changed after submission", 1);
    printf("  data went to the first buffer: %d, second empty: %d\n", strcmp(ia, "payload!") == 0, ib[0] == 0);

    /* Descriptors and buffers that are not the program's (in the LWK: the VMM's range and
     * memory): EBADF and EFAULT, as for any fd that is not open or memory not mapped. */
    io_uring_prep_read(sqe(16), 65290, b, 8, 0);
    reap("read from fd 65290", 1);
    int bogus = 65291;
    printf("register files with fd 65291: %d\n", io_uring_register_files_update(&ring, 0, &bogus, 1));
    struct iovec far = {(void *)0x7e0000001000ul, 4096};
    io_uring_unregister_buffers(&ring);
    printf("register a buffer at 0x7e0000001000: %d\n", io_uring_register_buffers(&ring, &far, 1));

    /* OPENAT and CLOSE. */
    io_uring_prep_openat(sqe(18), AT_FDCWD, path, O_RDONLY, 0);
    io_uring_submit_and_wait(&ring, 1);
    struct io_uring_cqe *oc;
    io_uring_wait_cqe(&ring, &oc);
    int ofd = oc->res;
    printf("openat completion: ud %llu\n", (unsigned long long)oc->user_data);
    io_uring_cqe_seen(&ring, oc);
    char ob[8] = {0};
    printf("openat: fd ok %d, reads %zd bytes\n", ofd > 2, pread(ofd, ob, 7, 0));
    io_uring_prep_close(sqe(19), ofd);
    reap("close", 1);
    io_uring_prep_openat(sqe(20), AT_FDCWD, "/nonexistent/x", O_RDONLY, 0);
    reap("openat of a missing file", 1);

    no_mmap_ring();
    single_issuer_ring(path);

    struct io_uring_probe *p = io_uring_get_probe_ring(&ring);
    printf("probe: READ %d WRITE %d\n", p && io_uring_opcode_supported(p, IORING_OP_READ),
           p && io_uring_opcode_supported(p, IORING_OP_WRITE));
    io_uring_free_probe(p);
    /* A forked child submits on the parent's ring (shared, as after fork on Linux). Last: the
     * parent's liburing does not know of the child's submission, so it must not submit again. */
    pid_t kid = fork();
    if (kid == 0) {
        io_uring_prep_write(sqe(17), fd, "from the child", 14, 400);
        io_uring_submit(&ring);
        struct io_uring_cqe *c;
        io_uring_wait_cqe(&ring, &c);
        int ok = c->res == 14;
        io_uring_cqe_seen(&ring, c); /* the CQ ring is the parent's too */
        _exit(ok ? 0 : 1);
    }
    int kst = 0;
    waitpid(kid, &kst, 0);
    char kb[16] = {0};
    pread(fd, kb, 14, 400);
    printf("child's submission on the shared ring: exit %d, file holds %s\n", WEXITSTATUS(kst), kb);

    io_uring_queue_exit(&ring);
    unlink(path);
    return 0;
}
