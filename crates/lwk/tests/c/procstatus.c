/* Issue #16: the guest's own /proc/self/status and /proc/self/stat describe the guest — its
 * threads, signal state and address space — not the VMM (before: "Threads: 4", the VMM's signal
 * masks, VmSize 4.3 GB, FDSize 32768). Prints what must equal the native run; the sizes are
 * checked for consistency here and only "ok" is printed for them. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void handler(int s) { (void)s; }

static const char *keys[] = {"Threads:", "SigPnd:", "ShdPnd:", "SigBlk:", "SigIgn:", "SigCgt:", 0};

/* The value of `key` in `path` (a status file), as a string. */
static long status_kb(const char *path, const char *key) {
    FILE *f = fopen(path, "r");
    char line[512];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, strlen(key))) v = atol(line + strlen(key));
    if (f) fclose(f);
    return v;
}

static void show(const char *label, const char *path) {
    FILE *f = fopen(path, "r");
    char line[512];
    if (!f) { perror(path); exit(1); }
    while (fgets(line, sizeof line, f))
        for (int i = 0; keys[i]; i++)
            if (!strncmp(line, keys[i], strlen(keys[i]))) printf("%s %s", label, line);
    fclose(f);
}

/* Fields 20 and 31-34 of a stat file. */
static void show_stat(const char *label, const char *path) {
    char b[4096];
    int fd = open(path, O_RDONLY);
    int n = fd < 0 ? -1 : (int)read(fd, b, sizeof b - 1);
    if (n <= 0) { perror(path); exit(1); }
    close(fd);
    b[n] = 0;
    int field = 3;
    for (char *t = strtok(strrchr(b, ')') + 2, " \n"); t; t = strtok(0, " \n"), field++)
        if (field == 20 || (field >= 31 && field <= 34)) printf("%s stat %d %s\n", label, field, t);
}

/* VmSize must be the sum of the maps' areas (less [vsyscall], which is no area of the mm). */
static void sizes(const char *label) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    unsigned long total = 0, a, b;
    while (fgets(line, sizeof line, f))
        if (!strstr(line, "[vsyscall]") && sscanf(line, "%lx-%lx", &a, &b) == 2) total += b - a;
    fclose(f);
    long size = status_kb("/proc/self/status", "VmSize:"), peak = status_kb("/proc/self/status", "VmPeak:");
    long fds = status_kb("/proc/self/status", "FDSize:");
    int ok = size == (long)(total / 1024) && peak >= size && size < 1024 * 1024 && fds >= 128 && fds < 4096;
    printf("%s sizes %s", label, ok ? "ok\n" : "WRONG: ");
    if (!ok) printf("VmSize %ld VmPeak %ld maps %lu kB FDSize %ld\n", size, peak, total / 1024, fds);
}

static void *idle(void *arg) {
    (void)arg;
    sleep(2);
    return 0;
}

int main(void) {
    show("start", "/proc/self/status");
    signal(SIGUSR1, handler);
    signal(SIGPIPE, SIG_IGN);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR2);
    sigaddset(&s, SIGTERM);
    sigaddset(&s, SIGRTMIN + 3);
    sigprocmask(SIG_BLOCK, &s, 0);
    kill(getpid(), SIGUSR2);
    pthread_t t1, t2;
    pthread_create(&t1, 0, idle, 0);
    pthread_create(&t2, 0, idle, 0);
    dup2(1, 100);
    show("threads", "/proc/self/status");
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", getpid());
    show("by-pid", path);
    show("thread-self", "/proc/thread-self/status");
    show_stat("threads", "/proc/self/stat");
    sizes("threads");
    void *big = malloc(64 << 20);
    sizes("malloc");
    free(big);
    pthread_cancel(t1);
    pthread_cancel(t2);
    pthread_join(t1, 0);
    pthread_join(t2, 0);
    show("joined", "/proc/self/status");
    return 0;
}
