/* Issue #13: the LWK makes the memslots of its guest window as the window is used (512 MiB each,
 * `winslots.rs`). This program reaches fresh parts of the window every way a program does —
 * threads mapping at once, brk, a forked child (its new VM must get every memslot the parent
 * had, and make new ones of its own), mappings after the child. Prints one line per check; the
 * output is compared with native. */
#define _GNU_SOURCE
#include <pthread.h>
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
        /* 1.1 GiB: past every chunk the parent had made, so the child's VM makes new ones;
         * three pages touched (its first, middle and last). */
        long big_len = 1100 * MIB;
        char *big = mmap(NULL, big_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        long big_sum = -1;
        if (big != MAP_FAILED) {
            big[0] = 1, big[big_len / 2] = 2, big[big_len - 1] = 3;
            big_sum = big[0] + big[big_len / 2] + big[big_len - 1];
        }
        printf("child: parent's map %s, own map %ld, big map %ld\n",
               again == before_sum ? "intact" : "DIFFERS", mapped_sum(256 * MIB, 11), big_sum);
        fflush(stdout);
        _exit(3);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    printf("parent: child exited %d; own map after %ld, earlier map %ld\n", WEXITSTATUS(status),
           mapped_sum(256 * MIB, 13), touch(before, before_len, 5));

    return 0;
}
