/* Issue #4: sigaltstack as the program sees it (crates/emulate/tests/issue_4_alt_stack.rs): its
 * own setting, its errors, SA_ONSTACK handlers with and without a stack of its own (and one set
 * inside a handler, which its return keeps here: the kernel's flags are 0 in a main thread that
 * never set one), a fork child, a new thread, a query made with 1 KiB of stack left (the SIGSYS
 * frame used to land below it). Compared with the native run line by line. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static char *main_sp;
static char *x;                 /* the program's own stack */
#define XSZ (256 * 1024)

static void show(const char *what) {
    stack_t s;
    int r = sigaltstack(NULL, &s);
    printf("%s: r %d sp %s size %zu flags %#x\n", what, r,
           s.ss_sp == NULL ? "null" : s.ss_sp == x ? "own" : "other", s.ss_size, (unsigned)s.ss_flags);
}

static const char *where(void *p) {
    char *c = p;
    if (c >= x && c < x + XSZ)
        return "own stack";
    if (c < main_sp && c > main_sp - (1 << 20))
        return "interrupted stack";
    return "elsewhere";
}

static volatile int in_handler_set;
static void on_usr1(int sig) {
    char here;
    (void)sig;
    printf("handler runs on the %s\n", where(&here));
    show("  in the handler");
    if (in_handler_set) {
        static char y[64 * 1024];
        stack_t n = {.ss_sp = y, .ss_size = sizeof y};
        int r = sigaltstack(&n, NULL);
        printf("  set a stack in the handler: %d %s\n", r, r ? strerror(errno) : "");
        stack_t s;
        sigaltstack(NULL, &s);
        printf("  then: %s flags %#x\n", s.ss_sp == y ? "that one" : "another", (unsigned)s.ss_flags);
    }
}

/* sigaltstack(NULL, out) with 1 KiB of stack left above a guard page. */
static long query_on_small_stack(stack_t *out) {
    static char *m;
    if (!m) {
        m = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        mprotect(m, 4096, PROT_NONE);
    }
    char *sp = m + 4096 + 1024;
    long r;
    __asm__ volatile("mov %%rsp, %%r12\n\t"
                     "mov %1, %%rsp\n\t"
                     "mov $131, %%eax\n\t" /* sigaltstack */
                     "xor %%edi, %%edi\n\t"
                     "mov %2, %%rsi\n\t"
                     "syscall\n\t"
                     "mov %%r12, %%rsp\n\t"
                     : "=a"(r)
                     : "r"(sp), "r"(out)
                     : "rcx", "rdi", "rsi", "r11", "r12", "memory");
    return r;
}

static void *thread(void *arg) {
    (void)arg;
    show("new thread");
    stack_t n = {.ss_sp = x, .ss_size = XSZ};
    printf("thread sets its own: %d\n", sigaltstack(&n, NULL));
    show("new thread, own set");
    n.ss_flags = SS_DISABLE;
    printf("thread disables it: %d\n", sigaltstack(&n, NULL));
    show("new thread, disabled");
    return NULL;
}

int main(void) {
    char here;
    main_sp = &here;
    setvbuf(stdout, NULL, _IOLBF, 0);
    x = mmap(NULL, XSZ, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    show("start");
    stack_t q;
    long qr = query_on_small_stack(&q);
    printf("query with 1 KiB of stack: r %ld size %zu flags %#x\n", qr, q.ss_size, (unsigned)q.ss_flags);
    struct sigaction sa = {.sa_handler = on_usr1, .sa_flags = SA_ONSTACK};
    sigaction(SIGUSR1, &sa, NULL);
    /* raise's tgkill made once before (an ignored signal): under the lazy interception the
     * first call from a site is served inside the library's SIGSYS handler, and a signal that
     * arrives during it runs its handler there, nested on the library's stack (EMULATOR.md). */
    signal(SIGUSR2, SIG_IGN);
    raise(SIGUSR2);
    raise(SIGUSR1); /* SA_ONSTACK, no stack of its own */
    in_handler_set = 1;
    raise(SIGUSR1); /* ... and one set inside the handler: undone by its sigreturn */
    in_handler_set = 0;
    show("after the handler");
    stack_t n = {.ss_sp = x, .ss_size = XSZ}, o;
    int r = sigaltstack(&n, &o);
    printf("set own: %d, old flags %#x size %zu\n", r, (unsigned)o.ss_flags, o.ss_size);
    show("own set");
    raise(SIGUSR1);
    n.ss_flags = 5;
    r = sigaltstack(&n, NULL);
    printf("bad flags: %d %s\n", r, r ? strerror(errno) : "");
    n.ss_flags = 0;
    n.ss_size = 1000;
    r = sigaltstack(&n, NULL);
    printf("too small: %d %s\n", r, r ? strerror(errno) : "");
    r = sigaltstack((stack_t *)8, NULL);
    printf("bad pointer: %d %s\n", r, r ? strerror(errno) : "");
    r = sigaltstack(NULL, (stack_t *)8);
    printf("bad old pointer: %d %s\n", r, r ? strerror(errno) : "");
    show("still own");
    qr = query_on_small_stack(&q);
    printf("query with 1 KiB of stack: r %ld %s flags %#x\n", qr, q.ss_sp == x ? "own" : "other", (unsigned)q.ss_flags);
    pid_t c = fork();
    if (c == 0) {
        show("fork child");
        _exit(0);
    }
    waitpid(c, NULL, 0);
    n.ss_size = XSZ;
    n.ss_flags = SS_DISABLE | (int)(1U << 31) /* SS_AUTODISARM */;
    r = sigaltstack(&n, &o);
    printf("disable own: %d, old %s flags %#x\n", r, o.ss_sp == x ? "own" : "other", (unsigned)o.ss_flags);
    show("disabled");
    n.ss_flags = SS_DISABLE;
    sigaltstack(&n, NULL);
    raise(SIGUSR1);
    pthread_t t;
    pthread_create(&t, NULL, thread, NULL);
    pthread_join(t, NULL);
    n.ss_flags = SS_DISABLE;
    sigaltstack(&n, NULL);
    show("end");
    return 0;
}
