/* Issue #14: unbounded recursion runs into a stack guard and the process dies of SIGSEGV, as
 * natively. `thread`: a pthread with a 256 KiB stack runs into glibc's PROT_NONE guard page;
 * `main`: the main thread runs off its 8 MiB stack. `handled`: a SIGSEGV handler on an alternate
 * stack reports the fault (si_code, and whether si_addr is within a page of the guard) and exits. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *volatile low_water;

static int deep(int n) {
    volatile char pad[1024];
    memset((char *)pad, n, sizeof pad);
    low_water = (char *)pad;
    return deep(n + 1) + pad[n % 1024];
}

static void *run(void *arg) {
    (void)arg;
    return (void *)(long)deep(0);
}

static void on_segv(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    long dist = (char *)low_water - (char *)si->si_addr;
    printf("SIGSEGV %d code %d addr within 4 KiB below the deepest frame: %s\n", sig, si->si_code,
           dist >= 0 && dist <= 8192 ? "yes" : "no");
    fflush(stdout);
    _exit(3);
}

int main(int argc, char **argv) {
    const char *where = argc > 1 ? argv[1] : "thread";
    if (argc > 2 && strcmp(argv[2], "handled") == 0) {
        static char alt[65536];
        stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt};
        sigaltstack(&ss, 0);
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_segv;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigaction(SIGSEGV, &sa, 0);
    }
    printf("recursing on the %s stack\n", where);
    fflush(stdout);
    if (strcmp(where, "main") == 0)
        return deep(0);
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, 256 * 1024);
    pthread_t t;
    pthread_create(&t, &at, run, 0);
    pthread_join(t, 0);
    printf("not reached\n");
    return 0;
}
