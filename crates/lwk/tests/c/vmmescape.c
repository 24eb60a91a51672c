/* Issue #16 item 1: a forked child must not reach its parent's VMM with process_vm_readv/writev.
 * stdin gives two addresses of the parent VMM (read by the test from /proc/<vmm>/maps): the start
 * of the first mapping of the VMM binary (its ELF header) and the start of its [stack]. The child
 * also tries to find them itself in /proc/<ppid>/maps. Every attempt must fail (EPERM/EFAULT);
 * reading the parent's *guest* memory (in the window) must work, as natively between processes. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static long global = 1234;
static int bad = 0;

static void refused(const char *what, long r) {
    int ok = r == -1 && (errno == EPERM || errno == EFAULT);
    printf("%s: %s\n", what, ok ? "refused" : "NOT REFUSED");
    bad += !ok;
}

/* Where the parent's maps (if readable) put the VMM binary and [stack]. */
static void from_maps(pid_t pid, unsigned long *elf, unsigned long *stack) {
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "r");
    printf("parent maps: %s\n", f ? "readable" : "refused");
    if (!f) return;
    int got_elf = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long a = strtoul(line, NULL, 16);
        if (!got_elf && (strstr(line, "lwk-run") || strstr(line, "multios"))) { *elf = a; got_elf = 1; }
        if (strstr(line, "[stack]")) *stack = a;
    }
    fclose(f);
}

static void attack(pid_t target, unsigned long elf, unsigned long stack, const char *who) {
    char hdr[8] = {0}, what[96];
    struct iovec l = {hdr, 8}, r = {(void *)elf, 8};
    snprintf(what, sizeof what, "process_vm_readv of the %s VMM's ELF header", who);
    refused(what, process_vm_readv(target, &l, 1, &r, 1, 0));
    unsigned long junk = 0x4141414141414141UL;
    struct iovec lw = {&junk, 8}, rw = {(void *)stack, 8};
    snprintf(what, sizeof what, "process_vm_writev into the %s VMM's stack", who);
    refused(what, process_vm_writev(target, &lw, 1, &rw, 1, 0));
    /* A remote iovec array that lives outside the window (in the VMM). */
    snprintf(what, sizeof what, "remote iovec array outside the window (%s)", who);
    refused(what, process_vm_readv(target, &l, 1, (struct iovec *)0x7e0000000000UL, 1, 0));
    /* One good range followed by a VMM range. */
    long g = 0;
    struct iovec l2[2] = {{&g, 8}, {hdr, 8}}, r2[2] = {{&global, 8}, {(void *)elf, 8}};
    snprintf(what, sizeof what, "window range then VMM range (%s)", who);
    refused(what, process_vm_readv(target, l2, 2, r2, 2, 0));
}

int main(void) {
    unsigned long elf = 0, stack = 0;
    if (scanf("%lx %lx", &elf, &stack) != 2) {
        printf("no addresses on stdin\n");
        return 2;
    }
    global = 5678;
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        pid_t pp = getppid();
        from_maps(pp, &elf, &stack);
        attack(pp, elf, stack, "parent");
        long g = 0;
        struct iovec l = {&g, 8}, r = {&global, 8};
        long n = process_vm_readv(pp, &l, 1, &r, 1, 0);
        printf("in-window read of the parent's guest memory: %s\n", n == 8 && g == 5678 ? "ok" : "FAILED");
        bad += !(n == 8 && g == 5678);
        fflush(stdout);
        _exit(bad);
    }
    int st = 0;
    /* The parent toward its child's VMM (same binary, same addresses after fork). */
    attack(c, elf, stack, "child");
    waitpid(c, &st, 0);
    bad += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    printf("survived, %d not refused\n", bad);
    return bad;
}
