/* Issue #13: the LWK makes the memslots of its guest window as the window is used (128 MiB each,
 * `winslots.rs`), and ld.so's RELRO mprotect of a private file mapping drops only that range's
 * shadow entries. This program reaches fresh parts of the window every way a program does —
 * threads mapping at once, brk, a forked child (its new VM must get every memslot the parent
 * had, and make new ones of its own), mappings after the child — and takes write access away
 * from a private file mapping and gives it back. Prints one line per check; the output is
 * compared with native. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1024L * 1024L)
#define STEP (4 * MIB)

/* Writes a byte every STEP bytes of [p, p+len) and returns their sum read back. */
static long touch(char *p, long len, int seed) {
    long sum = 0;
    for (long off = 0; off < len; off += STEP) p[off] = (char)(seed + off / STEP);
    for (long off = 0; off < len; off += STEP) sum += p[off];
    return sum;
}

static long mapped_sum(long len, int seed) {
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return -1;
    long s = touch(p, len, seed);
    munmap(p, len);
    return s;
}

static void *worker(void *arg) {
    long k = (long)arg, total = 0;
    for (int round = 0; round < 3; round++) total += mapped_sum(200 * MIB, (int)k + round);
    return (void *)total;
}

static sigjmp_buf back;
static void on_segv(int sig) {
    (void)sig;
    siglongjmp(back, 1);
}

static const char *try_write(char *p, char v) {
    if (sigsetjmp(back, 1)) return "SIGSEGV";
    *(volatile char *)p = v;
    return "written";
}

int main(void) {
    pthread_t t[4];
    for (long k = 0; k < 4; k++) pthread_create(&t[k], NULL, worker, (void *)k);
    long total = 0;
    for (int k = 0; k < 4; k++) {
        void *r;
        pthread_join(t[k], &r);
        total += (long)r;
    }
    printf("threads: %ld\n", total);

    char *heap = sbrk(0);
    long grown = 0;
    for (int i = 0; i < 6; i++) {
        if (sbrk(50 * MIB) == (void *)-1) break;
        grown += 50 * MIB;
    }
    printf("brk: grew %ld MiB, sum %ld\n", grown / MIB, touch(heap, grown, 7));

    long before_len = 300 * MIB;
    char *before = mmap(NULL, before_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    long before_sum = touch(before, before_len, 3);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        long again = 0;
        for (long off = 0; off < before_len; off += STEP) again += before[off];
        printf("child: parent's map %s, own map %ld\n", again == before_sum ? "intact" : "DIFFERS",
               mapped_sum(256 * MIB, 11));
        fflush(stdout);
        _exit(3);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    printf("parent: child exited %d; own map after %ld, earlier map %ld\n", WEXITSTATUS(status),
           mapped_sum(256 * MIB, 13), touch(before, before_len, 5));

    char path[] = "/tmp/multios-slots-XXXXXX";
    int fd = mkstemp(path);
    char page[4096];
    memset(page, 'f', sizeof page);
    if (fd < 0 || write(fd, page, sizeof page) != sizeof page) return 1;
    char *fm = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    struct sigaction sa = {0};
    sa.sa_handler = on_segv;
    sa.sa_flags = SA_NODEFER;
    sigaction(SIGSEGV, &sa, NULL);
    const char *a = try_write(fm, 'a');
    mprotect(fm, 4096, PROT_READ);
    const char *b = try_write(fm, 'b');
    mprotect(fm, 4096, PROT_READ | PROT_WRITE);
    const char *c = try_write(fm + 1, 'c');
    char on_disk = 0;
    if (pread(fd, &on_disk, 1, 0) != 1) return 1;
    printf("private file map: %s, after PROT_READ %s, after RW %s, holds %c%c, file holds %c\n", a, b, c,
           fm[0], fm[1], on_disk);
    unlink(path);
    return 0;
}
