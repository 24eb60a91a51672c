/* Memory served by the LWK: brk (small malloc), mmap (large malloc), munmap, mremap, realloc. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static uint64_t sum(const unsigned char *p, size_t n) {
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++) s += p[i] * (i % 7 + 1);
    return s;
}

int main(void) {
    void *b0 = sbrk(0);
    char *small[1000];
    for (int i = 0; i < 1000; i++) { small[i] = malloc(100 + i); memset(small[i], i & 0xff, 100 + i); }
    uint64_t s = 0;
    for (int i = 0; i < 1000; i++) s += sum((unsigned char *)small[i], 100 + i);
    printf("small sum %llu, brk grew: %d\n", (unsigned long long)s, sbrk(0) > b0);
    for (int i = 0; i < 1000; i += 2) free(small[i]);
    size_t big = 64 << 20;
    unsigned char *m = malloc(big);
    printf("big zeroed: %d\n", m[0] == 0 && m[big - 1] == 0 && m[big / 2] == 0);
    memset(m, 0x5a, big);
    printf("big sum %llu\n", (unsigned long long)sum(m, big));
    free(m);
    unsigned char *a = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED) { perror("mmap"); return 1; }
    memset(a, 7, 1 << 20);
    a = mremap(a, 1 << 20, 8 << 20, MREMAP_MAYMOVE);
    if (a == MAP_FAILED) { perror("mremap"); return 1; }
    printf("mremap kept %d, tail zero %d\n", a[(1 << 20) - 1] == 7, a[(8 << 20) - 1] == 0);
    munmap(a, 8 << 20);
    unsigned char *c = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("fresh map zero %d\n", c[100] == 0);
    char *r = NULL;
    for (int i = 1; i <= 20; i++) { r = realloc(r, (size_t)i << 16); r[((size_t)i << 16) - 1] = (char)i; }
    printf("realloc ok %d\n", r[(20 << 16) - 1] == 20);
    printf("mprotect %d\n", mprotect(c, 4096, PROT_READ));
    return 0;
}
