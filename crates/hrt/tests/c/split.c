/* Split execution from a C program (issue #13): functions run on LWK vCPUs in this process's
 * address space. Each check prints "ok - ..." or "not ok - ..."; the exit status counts failures. */
#define _GNU_SOURCE
#include <multios/hrt.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;
#define CHECK(cond, ...) do { int c_ = (cond); printf("%s - ", c_ ? "ok" : "not ok"); printf(__VA_ARGS__); printf("\n"); fflush(stdout); if (!c_) failures++; } while (0)

static long add_one(void *arg) { long *p = arg; *p += 1; return *p * 2; }

static long touch_pages(void *arg) {
    struct { unsigned char *p; long len; } *a = arg;
    long s = 0;
    for (long i = 0; i < a->len; i += 4096) { a->p[i] += 1; s += a->p[i]; }
    return s;
}

static long sum_bytes(void *arg) {
    struct { const unsigned char *p; long len; } *a = arg;
    long s = 0;
    for (long i = 0; i < a->len; i++) s += a->p[i];
    return s;
}

/* Forwarded calls: stdout, open/read/close of a file. */
static long read_file(void *arg) {
    const char *path = arg;
    printf("in the LWK: reading %s\n", path);
    fflush(stdout);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    char buf[64] = {0};
    long n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n == 11 && memcmp(buf, "split works", 11) == 0 ? 1 : -2;
}

static long use_malloc(void *arg) {
    (void)arg;
    long s = 0;
    for (int k = 0; k < 50; k++) {
        size_t len = (size_t)(k + 1) << 16; /* up to 3 MiB: brk and mmap */
        unsigned char *p = malloc(len);
        if (!p) return -1;
        memset(p, k, len);
        s += p[len - 1];
        free(p);
    }
    return s;
}

/* The function's own mappings: mmap, touch, munmap, then the stale pointer (a use after free). */
static long own_mappings(void *arg) {
    unsigned long *where = arg;
    char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return -1;
    for (int i = 0; i < (1 << 20); i += 4096) p[i] = 1;
    mprotect(p, 4096, PROT_READ);
    if (p[0] != 1) return -2;
    munmap(p, 1 << 20);
    *where = (unsigned long)p;
    return *(volatile char *)p;
}

static long read_first(void *arg) { return *(volatile long *)arg; }
static long write_first(void *arg) { *(volatile long *)arg = 5; return 0; }
static volatile long *volatile bad_ptr = (long *)8;
static long null_deref(void *arg) { (void)arg; return *bad_ptr; }
static long get_tid(void *arg) { (void)arg; return syscall(SYS_gettid); }

/* Waits (in the guest) for the main thread to publish a mapping it makes while this runs. */
static _Atomic(long *) published;
static long wait_for_mapping(void *arg) {
    (void)arg;
    long *p;
    while (!(p = atomic_load(&published))) __builtin_ia32_pause();
    return p[4096 / sizeof(long)];
}

/* Two invocations that can only finish if both run at the same time. */
static atomic_int arrived;
static long barrier(void *arg) {
    (void)arg;
    atomic_fetch_add(&arrived, 1);
    long spins = 0;
    while (atomic_load(&arrived) < 2) { __builtin_ia32_pause(); if (++spins > 4000000000l) return -1; }
    return syscall(SYS_gettid);
}

static long make_thread_fn(void *arg) { (void)arg; return 0; }
static long try_pthread(void *arg) {
    (void)arg;
    pthread_t t;
    int r = pthread_create(&t, NULL, (void *(*)(void *))make_thread_fn, NULL);
    if (r == 0) pthread_join(t, NULL);
    return r;
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    struct hrt_config cfg = { .max_vcpus = 4, .idle_spin_us = 0, .first_cpu = -1, .quiet = 0 };
    int r = hrt_init(&cfg);
    if (r) { fprintf(stderr, "hrt_init: %s\n", hrt_strerror(r)); return 100; }
    CHECK(hrt_init(&cfg) == HRT_EBUSY, "a second hrt_init is HRT_EBUSY");

    /* The caller's memory, read and written. */
    long x = 41, ret = 0;
    struct hrt_fault fl_own;
    r = hrt_call(add_one, &x, &ret);
    CHECK(r == 0 && x == 42 && ret == 84, "synchronous call reads and writes the caller's stack (r=%d x=%ld ret=%ld)", r, x, ret);

    /* A big malloc made after the VM started. */
    long len = 256l << 20;
    unsigned char *big = malloc(len);
    struct { unsigned char *p; long len; } t = { big, len };
    r = hrt_call(touch_pages, &t, &ret);
    CHECK(r == 0 && ret == len / 4096 && big[len - 4096] == 1, "256 MiB malloc'ed after hrt_init is visible and writable (ret=%ld)", ret);

    /* A file mapped after the VM started. */
    char path[512];
    snprintf(path, sizeof path, "%s/hrt-split-%d.dat", dir, getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    unsigned char data[8192];
    long want = 0;
    for (int i = 0; i < 8192; i++) { data[i] = (unsigned char)(i * 7); want += data[i]; }
    if (write(fd, data, sizeof data) != (long)sizeof data) return 101;
    unsigned char *fm = mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, 0);
    struct { const unsigned char *p; long len; } s = { fm, 8192 };
    r = hrt_call(sum_bytes, &s, &ret);
    CHECK(r == 0 && ret == want, "a file mmap'ed after hrt_init reads as the file (%ld == %ld)", ret, want);
    close(fd);

    /* Forwarded calls: write to stdout, open/read/close. */
    char text[512];
    snprintf(text, sizeof text, "%s/hrt-text-%d.txt", dir, getpid());
    FILE *f = fopen(text, "w"); fputs("split works", f); fclose(f);
    r = hrt_call(read_file, text, &ret);
    CHECK(r == 0 && ret == 1, "forwarded printf, open, read, close (ret=%ld)", ret);
    unlink(text);

    /* malloc inside the function: brk and mmap forwarded, the new memory merged on demand. */
    r = hrt_call(use_malloc, NULL, &ret);
    CHECK(r == 0 && ret == 49 * 50 / 2, "malloc/free of up to 3 MiB inside the function (ret=%ld)", ret);

    /* Mappings the function makes and drops itself. */
    unsigned long gone = 0;
    r = hrt_call(own_mappings, &gone, &ret);
    hrt_last_fault(&fl_own);
    CHECK(r == HRT_EFAULTED && fl_own.addr == gone && fl_own.mapped == 0,
          "the function's own mmap/mprotect/munmap are followed: a use after munmap faults (r=%d addr=%#lx want %#lx)", r, fl_own.addr, gone);

    /* Asynchronous invocation and its join semantics. */
    hrt_thread_t h;
    x = 1;
    r = hrt_invoke_func(add_one, &x, &h);
    long jr = -1;
    int j = hrt_join(h, &jr);
    CHECK(r == 0 && j == 0 && jr == 4 && x == 2, "hrt_join returns the function's value (%ld)", jr);
    CHECK(hrt_join(h, &jr) == HRT_ESRCH, "joining twice is HRT_ESRCH");
    CHECK(hrt_join(12345, &jr) == HRT_ESRCH, "joining an unknown handle is HRT_ESRCH");

    /* A faulting function is reported; the process and the vCPU go on. */
    r = hrt_invoke_func(null_deref, NULL, &h);
    j = hrt_join(h, &jr);
    struct hrt_fault fl;
    hrt_last_fault(&fl);
    CHECK(r == 0 && j == HRT_EFAULTED && fl.vector == 14 && fl.addr == 8 && fl.mapped == 0,
          "a NULL dereference is HRT_EFAULTED with vector 14, address 0x8, no mapping (j=%d vector=%lu addr=%#lx)", j, fl.vector, fl.addr);
    r = hrt_call(add_one, &x, &ret);
    CHECK(r == 0 && ret == 6, "the vCPU runs the next function after a fault");

    /* Unmapped after use: the guest's view follows munmap. */
    long *m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    m[0] = 99;
    r = hrt_call(read_first, m, &ret);
    CHECK(r == 0 && ret == 99, "reads a fresh anonymous mapping");
    munmap(m, 1 << 20);
    r = hrt_call(read_first, m, &ret);
    hrt_last_fault(&fl);
    CHECK(r == HRT_EFAULTED && fl.addr == (unsigned long)m && fl.mapped == 0, "after munmap the same read faults (r=%d addr=%#lx)", r, fl.addr);
    long *m2 = mmap(m, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (m2 != MAP_FAILED) {
        m2[0] = 123;
        r = hrt_call(read_first, m2, &ret);
        CHECK(r == 0 && ret == 123, "a new mapping at the same address is seen (ret=%ld)", ret);
    }

    /* Protections as the host has them, and mprotect after use. */
    long *ro = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    r = hrt_call(write_first, ro, &ret);
    CHECK(r == 0 && ro[0] == 5, "writes a writable page");
    mprotect(ro, 4096, PROT_READ);
    r = hrt_call(write_first, ro, &ret);
    hrt_last_fault(&fl);
    CHECK(r == HRT_EFAULTED && fl.mapped == 1 && fl.addr == (unsigned long)ro, "after mprotect(PROT_READ) a write faults with a mapping there (r=%d)", r);
    r = hrt_call(read_first, ro, &ret);
    CHECK(r == 0 && ret == 5, "and a read still works");
    mprotect(ro, 4096, PROT_NONE);
    r = hrt_call(read_first, ro, &ret);
    CHECK(r == HRT_EFAULTED, "after mprotect(PROT_NONE) a read faults");

    /* A mapping made by another thread while the function runs. */
    r = hrt_invoke_func(wait_for_mapping, NULL, &h);
    usleep(20000);
    long *late = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    late[4096 / sizeof(long)] = 777;
    atomic_store(&published, late);
    j = hrt_join(h, &jr);
    CHECK(r == 0 && j == 0 && jr == 777, "sees memory mapped by another thread while it runs (%ld)", jr);

    /* Two invocations at once, on two vCPUs. */
    hrt_thread_t a, b;
    long ra = 0, rb = 0;
    hrt_invoke_func(barrier, NULL, &a);
    hrt_invoke_func(barrier, NULL, &b);
    int ja = hrt_join(a, &ra), jb = hrt_join(b, &rb);
    CHECK(ja == 0 && jb == 0 && ra > 0 && rb > 0 && ra != rb, "two invocations run at once on two vCPUs (tids %ld, %ld)", ra, rb);

    /* gettid in the function is its vCPU thread's, not the caller's. */
    r = hrt_call(get_tid, NULL, &ret);
    CHECK(r == 0 && ret > 0 && ret != syscall(SYS_gettid), "gettid is the vCPU thread's");

    /* pthread_create inside the function is refused (clone is not forwarded); the process goes on. */
    r = hrt_call(try_pthread, NULL, &ret);
    CHECK(r == 0 && ret != 0, "pthread_create inside a function fails cleanly (%ld)", ret);

    /* A forked child has no vCPUs: its calls are refused, the parent's go on. */
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        long v = 0;
        _exit(hrt_call(add_one, &v, &ret) == HRT_EFORKED && v == 0 ? 0 : 1);
    }
    int status = -1;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "hrt_call in a forked child is HRT_EFORKED");
    r = hrt_call(add_one, &x, &ret);
    CHECK(r == 0, "the parent's calls go on after fork");

    unlink(path);
    CHECK(hrt_fini() == 0, "hrt_fini");
    CHECK(hrt_call(add_one, &x, &ret) == HRT_ENOTINIT, "calls after hrt_fini are HRT_ENOTINIT");
    printf("%d failures\n", failures);
    return failures;
}
