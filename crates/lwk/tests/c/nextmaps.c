/* Issue #13: anonymous mappings in a runtime's rhythm — a chunk of 2 MiB + 16 KiB, then 24 KiB
 * of bookkeeping, as Racket maps its heap — each checked to read zero in every byte, then filled
 * with a pattern; every third pair, the pair before is unmapped (filled) and mapped again, so new
 * mappings land where old data was. Between pairs the program computes without system calls:
 * in the LWK the proxy, idle, populates the free memory where the next mappings will land
 * (`--populate-next`). At the end every pattern is read back. Prints a checksum and the number
 * of wrong bytes seen (0). Arguments: PAIRS (at most 64) and the compute loop's length. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#define CHUNK ((2ul << 20) + (16ul << 10))
#define META (24ul << 10)
#define MAX 64

static size_t wrong;
static unsigned long sum;
static volatile unsigned long sink;

static unsigned char at(size_t i, unsigned salt) { return (unsigned char)(i / 64 * 13 + salt); }

/* Every byte must read zero; then every 64th holds the pattern. */
static void fill(unsigned char *p, size_t len, unsigned salt) {
    const uint64_t *w = (const uint64_t *)p;
    for (size_t i = 0; i < len / 8; i++) wrong += w[i] != 0;
    for (size_t i = 0; i < len; i += 64) p[i] = at(i, salt);
}

/* The pattern is still there, and nothing else. */
static void check(const unsigned char *p, size_t len, unsigned salt) {
    for (size_t i = 0; i < len; i++) {
        unsigned char want = i % 64 == 0 ? at(i, salt) : 0;
        wrong += p[i] != want;
        sum += p[i];
    }
}

static void compute(long n) {
    for (long k = 0; k < n; k++) sink += (unsigned long)k ^ ((unsigned long)k >> 3);
}

static unsigned char *map(size_t len) {
    void *p = mmap(0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    return p;
}

int main(int argc, char **argv) {
    int pairs = argc > 1 ? atoi(argv[1]) : 12;
    long n = argc > 2 ? atol(argv[2]) : 2000000;
    unsigned char *chunk[MAX], *meta[MAX];
    unsigned salt[MAX];
    if (pairs < 2 || pairs > MAX) pairs = 12;
    for (int k = 0; k < pairs; k++) {
        chunk[k] = map(CHUNK);
        meta[k] = map(META);
        salt[k] = (unsigned)k;
        fill(chunk[k], CHUNK, salt[k]);
        fill(meta[k], META, salt[k] + 100);
        if (k % 3 == 2) {
            munmap(chunk[k - 1], CHUNK);
            munmap(meta[k - 1], META);
            chunk[k - 1] = map(CHUNK);
            meta[k - 1] = map(META);
            salt[k - 1] = (unsigned)k + 50;
            fill(chunk[k - 1], CHUNK, salt[k - 1]);
            fill(meta[k - 1], META, salt[k - 1] + 100);
        }
        compute(n);
    }
    for (int k = 0; k < pairs; k++) {
        check(chunk[k], CHUNK, salt[k]);
        check(meta[k], META, salt[k] + 100);
    }
    printf("pairs %d sum %lu wrong %zu\n", pairs, sum, wrong);
    return wrong != 0;
}
