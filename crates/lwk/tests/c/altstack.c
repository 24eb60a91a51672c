/* Alternate signal stacks: sigaltstack's values and errors, SA_ONSTACK handlers (for a raised
 * signal and for a page fault) running on the alternate stack, a handler without SA_ONSTACK not,
 * SS_AUTODISARM disarming during the handler and re-arming after it, SS_ONSTACK and EPERM while
 * running on it, a new thread without one. Output must match native. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifndef SS_AUTODISARM
#define SS_AUTODISARM (1U << 31) /* linux/signal.h; glibc does not export it */
#endif

static char alt[1 << 16];
static volatile int on_alt, disarmed_inside;
static sigjmp_buf env;
static int *volatile bad;

static int on_alt_stack(void) {
    char local;
    uintptr_t p = (uintptr_t)&local;
    return p >= (uintptr_t)alt && p < (uintptr_t)alt + sizeof alt;
}

static void record(int sig) {
    (void)sig;
    on_alt = on_alt_stack();
    stack_t cur;
    sigaltstack(0, &cur);
    disarmed_inside = (cur.ss_flags & SS_DISABLE) != 0;
}

static volatile int onstack_flag, change_refused;
static void probe(int sig) {
    (void)sig;
    stack_t cur, again;
    sigaltstack(0, &cur);
    onstack_flag = (cur.ss_flags & SS_ONSTACK) != 0;
    again = cur;
    again.ss_flags = 0;
    change_refused = sigaltstack(&again, 0) == -1 && errno == EPERM;
}

static void segv(int sig) {
    (void)sig;
    on_alt = on_alt_stack();
    siglongjmp(env, 1);
}

static void on(int sig, void (*h)(int), int flags) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h;
    sa.sa_flags = flags;
    sigaction(sig, &sa, 0);
}

static void *thread(void *arg) {
    (void)arg;
    stack_t cur;
    sigaltstack(0, &cur);
    printf("new thread: disabled %d\n", (cur.ss_flags & SS_DISABLE) != 0);
    return 0;
}

int main(void) {
    setvbuf(stdout, 0, _IONBF, 0);
    stack_t ss, old;
    sigaltstack(0, &old);
    printf("initial: disabled %d\n", (old.ss_flags & SS_DISABLE) != 0);

    ss.ss_sp = alt;
    ss.ss_size = 100;
    ss.ss_flags = 0;
    int r = sigaltstack(&ss, 0);
    printf("too small: %d %s\n", r, strerror(errno));
    ss.ss_size = sizeof alt;
    ss.ss_flags = 5;
    r = sigaltstack(&ss, 0);
    printf("bad flags: %d %s\n", r, strerror(errno));
    ss.ss_flags = 0;
    printf("set: %d\n", sigaltstack(&ss, 0));
    sigaltstack(0, &old);
    printf("query: sp ok %d size %zu flags %d\n", old.ss_sp == alt, old.ss_size, old.ss_flags);

    on(SIGUSR1, record, SA_ONSTACK);
    raise(SIGUSR1);
    printf("SA_ONSTACK handler on the alternate stack: %d, disarmed inside %d\n", on_alt, disarmed_inside);
    on(SIGURG, probe, SA_ONSTACK);
    raise(SIGURG);
    printf("on the alternate stack: SS_ONSTACK %d, a change refused with EPERM %d\n", onstack_flag,
           change_refused);
    on(SIGUSR2, record, 0);
    raise(SIGUSR2);
    printf("plain handler on the alternate stack: %d\n", on_alt);

    on(SIGSEGV, segv, SA_ONSTACK);
    bad = (int *)8;
    if (sigsetjmp(env, 1) == 0)
        printf("read %d\n", *bad);
    printf("SIGSEGV handler on the alternate stack: %d\n", on_alt);

    ss.ss_flags = SS_AUTODISARM;
    sigaltstack(&ss, 0);
    raise(SIGUSR1);
    sigaltstack(0, &old);
    printf("autodisarm: on the alternate stack %d, disarmed inside %d, re-armed after %d\n", on_alt,
           disarmed_inside, (old.ss_flags & SS_DISABLE) == 0);

    pthread_t t;
    pthread_create(&t, 0, thread, 0);
    pthread_join(t, 0);

    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, 0);
    raise(SIGUSR1);
    printf("after SS_DISABLE: on the alternate stack %d\n", on_alt);
    return 0;
}
