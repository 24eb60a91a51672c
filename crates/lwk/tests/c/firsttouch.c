/* Issue #13: fresh memory touched for the first time — an anonymous mapping of N MiB and a brk
 * growth of N/2 MiB — reads zero, keeps what is written to every page, and reads zero again
 * after munmap and a new mapping of the same size (a page populated ahead and then given back
 * must not keep old data). Between mapping and touching, the program makes CALLS cheap system
 * calls (getppid): in the LWK the proxy populates new memory between calls (`--populate`).
 * Prints a checksum and the number of wrong bytes seen (0). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static size_t wrong;
static unsigned long sum;

/* Every page of [p, p+len) must read zero at its first and last byte, then holds a pattern. */
static void touch(unsigned char *p, size_t len, unsigned salt) {
    for (size_t i = 0; i < len; i += 4096) {
        wrong += p[i] != 0;
        wrong += p[i + 4095] != 0;
        p[i] = (unsigned char)((i >> 12) * 7 + salt);
        p[i + 4095] = (unsigned char)((i >> 12) + salt);
    }
    for (size_t i = 0; i < len; i += 4096) {
        wrong += p[i] != (unsigned char)((i >> 12) * 7 + salt);
        wrong += p[i + 4095] != (unsigned char)((i >> 12) + salt);
        sum += p[i] + p[i + 4095];
    }
}

static void calls(long n) {
    for (long k = 0; k < n; k++) syscall(SYS_getppid);
}

int main(int argc, char **argv) {
    size_t len = (size_t)(argc > 1 ? atol(argv[1]) : 16) << 20;
    long n = argc > 2 ? atol(argv[2]) : 20000;
    unsigned char *a = mmap(0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED) return 1;
    calls(n);
    touch(a, len, 1);
    munmap(a, len);
    unsigned char *b = mmap(0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b == MAP_FAILED) return 1;
    calls(n);
    touch(b, len, 2);
    /* The break: grown by half as much, page-aligned first. */
    uintptr_t top = (uintptr_t)sbrk(0);
    sbrk((intptr_t)((4096 - top % 4096) % 4096));
    unsigned char *h = sbrk((intptr_t)(len / 2));
    if (h == (void *)-1) return 1;
    calls(n);
    touch(h, len / 2, 3);
    printf("sum %lu wrong %zu\n", sum, wrong);
    return wrong != 0;
}
