/* Issue #14: page protections as Linux enforces them. Each case prints the signal, si_code and
 * si_addr relative to the mapping it touched (ASLR makes absolute addresses differ), so the output
 * is the same natively and in the LWK. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static sigjmp_buf jump;
static volatile int mode; /* 0: jump back; 1: make `fix` writable and retry */
static char *volatile base, *volatile fix;
static volatile int faults;
static char *volatile code_page;

static void on_segv(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    faults++;
    printf("  %s code %d addr base%+ld\n", sig == SIGSEGV ? "SIGSEGV" : "other", si->si_code,
           (long)((char *)si->si_addr - base));
    if (mode == 1) {
        mprotect(fix, 4096, PROT_READ | PROT_WRITE);
        return;
    }
    siglongjmp(jump, 1);
}

#define TRY(what, stmt)                                                                          \
    do {                                                                                         \
        printf("%s\n", what);                                                                    \
        if (sigsetjmp(jump, 1) == 0) {                                                           \
            stmt;                                                                                \
            printf("  no fault\n");                                                              \
        }                                                                                        \
    } while (0)

/* Another thread writes a page in a loop while this one makes it read-only: once mprotect has
 * returned, no write of the other thread may succeed (Linux's TLB shootdown). */
static char *volatile shared_page;
static volatile int protected_now, writer_faulted, writer_ready;
static volatile long violations;
static __thread sigjmp_buf writer_jump;

static void on_writer_segv(int sig) {
    (void)sig;
    writer_faulted = 1;
    siglongjmp(writer_jump, 1);
}

static void *writer(void *arg) {
    (void)arg;
    if (sigsetjmp(writer_jump, 1) != 0)
        return 0;
    for (long i = 0;; i++) {
        int p = protected_now;
        shared_page[i & 4095] = (char)i;
        writer_ready = 1;
        if (p)
            violations++;
    }
}

static void shootdown_case(void) {
    shared_page = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_writer_segv;
    sigaction(SIGSEGV, &sa, &old);
    pthread_t t;
    pthread_create(&t, 0, writer, 0);
    while (!writer_ready)
        ;
    mprotect(shared_page, 4096, PROT_READ);
    protected_now = 1;
    pthread_join(t, 0);
    sigaction(SIGSEGV, &old, 0);
    printf("other thread: faulted %d, writes after mprotect returned %ld\n", writer_faulted, violations);
}

typedef int (*fn_t)(void);
static const unsigned char ret42[] = {0xb8, 42, 0, 0, 0, 0xc3}; /* mov $42,%eax; ret */
static const unsigned char ret7[] = {0xb8, 7, 0, 0, 0, 0xc3};
static const int rodata[1024] = {1};

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, 0);
    setvbuf(stdout, 0, _IONBF, 0);

    /* A guard page between two read-write pages. */
    base = mmap(0, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    code_page = base;
    mprotect(base + 4096, 4096, PROT_NONE);
    base[0] = 1;
    base[2 * 4096] = 1;
    TRY("write to a PROT_NONE guard page", base[4096 + 8] = 1);
    TRY("read of a PROT_NONE guard page", (void)*(volatile char *)(base + 4096 + 16));
    mprotect(base + 4096, 4096, PROT_READ);
    TRY("read of a read-only page", (void)*(volatile char *)(base + 4096 + 24));
    TRY("write to a read-only page", base[4096 + 32] = 1);
    mprotect(base + 4096, 4096, PROT_READ | PROT_WRITE);
    TRY("write after mprotect back to read-write", base[4096 + 40] = 1);
    munmap(base + 2 * 4096, 4096);
    TRY("read of an unmapped page", (void)*(volatile char *)(base + 2 * 4096 + 8));
    base = (char *)rodata;
    TRY("write to const data (.rodata)", *(volatile int *)&rodata[512] = 2);
    base = (char *)code_page;

    /* Executing a page without PROT_EXEC. */
    memcpy(base, ret42, sizeof ret42);
    TRY("call into a read-write page", printf("  returned %d\n", ((fn_t)base)()));

    /* A W^X JIT: write code, make it R-X, call it; writing it again faults, the handler makes
     * it writable and returns, the write is retried. */
    char *code = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    base = code;
    memcpy(code, ret42, sizeof ret42);
    mprotect(code, 4096, PROT_READ | PROT_EXEC);
    printf("jit: first code returns %d\n", ((fn_t)code)());
    mode = 1;
    fix = code;
    faults = 0;
    printf("jit: rewrite the code page (R-X)\n");
    memcpy(code, ret7, sizeof ret7);
    mode = 0;
    printf("jit: %d fault(s) caught and retried\n", faults);
    mprotect(code, 4096, PROT_READ | PROT_EXEC);
    printf("jit: new code returns %d\n", ((fn_t)code)());

    /* Delegated calls copy to and from the buffer as the kernel does: EFAULT. */
    char *buf = mmap(0, 2 * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int p[2];
    ssize_t n;
    if (pipe(p) != 0)
        return 1;
    errno = 0;
    n = write(p[1], buf, 8);
    printf("write from a PROT_NONE buffer: %zd errno %d\n", n, errno);
    mprotect(buf, 4096, PROT_READ);
    (void)!write(p[1], "abcdefgh", 8);
    errno = 0;
    n = read(p[0], buf, 8);
    printf("read into a read-only buffer: %zd errno %d\n", n, errno);
    errno = 0;
    n = write(p[1], buf, 8);
    printf("write from a read-only buffer: %zd errno %d\n", n, errno);
    mprotect(buf, 4096, PROT_READ | PROT_WRITE);
    n = read(p[0], buf, 8);
    printf("read into a read-write buffer: %zd\n", n);
    (void)!write(p[1], "abcdefgh", 8);
    errno = 0;
    n = read(p[0], buf + 4096 - 4, 8);
    printf("read straddling into PROT_NONE: %zd errno %d\n", n, errno);
    shootdown_case();
    printf("done\n");
    return 0;
}
