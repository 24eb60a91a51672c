/* Kernel-shared mappings (issue #14): setup costs and steady-state access, natively and in the
 * LWK. Usage: maps MODE N [MiB]. Prints "kernel_ns T" for the timed loop and the cost per
 * operation.
 *   file N    mmap MAP_SHARED of a 1 MiB memfd + munmap, N times (no page touched)
 *   uring N   io_uring_setup(64) + the SQ ring, CQ ring and SQE mmaps + munmaps + close, N times
 *   perf N    perf_event_open (software cpu-clock, this thread) + a 1+8 page ring mmap + close
 *   access N MiB  N read-modify-write passes over a MAP_SHARED memfd of MiB (pages touched first)
 *   nop N     N io_uring NOPs, 32 per io_uring_enter, completions read from the shared CQ ring */
#define _GNU_SOURCE
#include <linux/io_uring.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static int memfd(size_t len) {
    int fd = memfd_create("maps-bench", 0);
    if (fd < 0 || ftruncate(fd, (off_t)len) != 0) exit(2);
    return fd;
}

struct ring {
    int fd;
    struct io_uring_params p;
    char *sq, *cq;
    struct io_uring_sqe *sqes;
    size_t sq_len, cq_len, sqes_len;
};

static int ring_open(struct ring *r, unsigned entries) {
    memset(&r->p, 0, sizeof r->p);
    r->fd = (int)syscall(SYS_io_uring_setup, entries, &r->p);
    if (r->fd < 0) return -1;
    r->sq_len = r->p.sq_off.array + r->p.sq_entries * 4;
    r->cq_len = r->p.cq_off.cqes + r->p.cq_entries * sizeof(struct io_uring_cqe);
    if (r->p.features & IORING_FEAT_SINGLE_MMAP && r->cq_len > r->sq_len) r->sq_len = r->cq_len;
    r->sq = mmap(0, r->sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
    r->cq = r->p.features & IORING_FEAT_SINGLE_MMAP
                ? r->sq
                : mmap(0, r->cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_CQ_RING);
    r->sqes_len = r->p.sq_entries * sizeof(struct io_uring_sqe);
    r->sqes = mmap(0, r->sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
    return r->sq == MAP_FAILED || r->cq == MAP_FAILED || r->sqes == MAP_FAILED ? -1 : 0;
}

static void ring_close(struct ring *r) {
    munmap(r->sqes, r->sqes_len);
    if (r->cq != r->sq) munmap(r->cq, r->cq_len);
    munmap(r->sq, r->sq_len);
    close(r->fd);
}

/* n NOPs, 32 per enter; returns the completions seen. */
static long nops(struct ring *r, long n) {
    unsigned *tail = (unsigned *)(r->sq + r->p.sq_off.tail), *array = (unsigned *)(r->sq + r->p.sq_off.array);
    unsigned mask = *(unsigned *)(r->sq + r->p.sq_off.ring_mask);
    unsigned *chead = (unsigned *)(r->cq + r->p.cq_off.head), *ctail = (unsigned *)(r->cq + r->p.cq_off.tail);
    unsigned cmask = *(unsigned *)(r->cq + r->p.cq_off.ring_mask);
    struct io_uring_cqe *cqes = (struct io_uring_cqe *)(r->cq + r->p.cq_off.cqes);
    long seen = 0;
    for (long done = 0; done < n; done += 32) {
        unsigned t = *tail;
        for (unsigned k = 0; k < 32; k++) {
            unsigned i = (t + k) & mask;
            memset(&r->sqes[i], 0, sizeof r->sqes[i]);
            r->sqes[i].opcode = IORING_OP_NOP;
            r->sqes[i].user_data = done + k;
            array[i] = i;
        }
        __atomic_store_n(tail, t + 32, __ATOMIC_RELEASE);
        if (syscall(SYS_io_uring_enter, r->fd, 32, 32, IORING_ENTER_GETEVENTS, NULL, 0) != 32) return -1;
        unsigned h = *chead, ct = __atomic_load_n(ctail, __ATOMIC_ACQUIRE);
        for (; h != ct; h++) seen += cqes[h & cmask].res == 0;
        __atomic_store_n(chead, h, __ATOMIC_RELEASE);
    }
    return seen;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "file";
    long n = argc > 2 ? atol(argv[2]) : 100, t0, t, bad = 0;
    if (!strcmp(mode, "file")) {
        int fd = memfd(1 << 20);
        t0 = now();
        for (long i = 0; i < n; i++) {
            char *p = mmap(0, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            bad += p == MAP_FAILED || munmap(p, 1 << 20) != 0;
        }
    } else if (!strcmp(mode, "uring")) {
        t0 = now();
        for (long i = 0; i < n; i++) {
            struct ring r;
            bad += ring_open(&r, 64) != 0;
            ring_close(&r);
        }
    } else if (!strcmp(mode, "perf")) {
        struct perf_event_attr a;
        memset(&a, 0, sizeof a);
        a.size = sizeof a;
        a.type = PERF_TYPE_SOFTWARE;
        a.config = PERF_COUNT_SW_CPU_CLOCK;
        a.sample_period = 1000000;
        a.sample_type = PERF_SAMPLE_IP;
        a.disabled = 1;
        t0 = now();
        for (long i = 0; i < n; i++) {
            int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
            char *p = fd < 0 ? MAP_FAILED : mmap(0, 9 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            bad += p == MAP_FAILED;
            if (p != MAP_FAILED) munmap(p, 9 * 4096);
            close(fd);
        }
    } else if (!strcmp(mode, "access")) {
        size_t len = (size_t)(argc > 3 ? atol(argv[3]) : 64) << 20;
        int fd = memfd(len);
        unsigned long *p = mmap(0, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) return 3;
        for (size_t i = 0; i < len / 8; i += 512) p[i] = i;
        unsigned long sum = 0;
        t0 = now();
        for (long k = 0; k < n; k++)
            for (size_t i = 0; i < len / 8; i++) sum += p[i]++;
        bad = sum == 42; /* keeps the loop */
    } else if (!strcmp(mode, "nop")) {
        struct ring r;
        if (ring_open(&r, 64) != 0) return 4;
        t0 = now();
        bad = nops(&r, n) != n;
        t = now() - t0;
        ring_close(&r);
        printf("kernel_ns %ld ops %ld failed %ld per_op_ns %ld\n", t, n, bad, t / (n ? n : 1));
        return bad != 0;
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    t = now() - t0;
    printf("kernel_ns %ld ops %ld failed %ld per_op_ns %ld\n", t, n, bad, t / (n ? n : 1));
    return bad != 0;
}
