/* Issue #13: the malloc family under load, for the `lwk-heap` override against glibc's malloc:
 * four threads allocate (malloc, calloc, memalign, realloc) and free blocks of 1 to 300 000 bytes
 * at random, check their contents, calloc's zeros, alignment and malloc_usable_size; prints one
 * checksum, the same whichever allocator serves them. */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static void *work(void *arg) {
    unsigned s = (unsigned)(uintptr_t)arg;
    void *slots[512] = {0};
    size_t sz[512] = {0};
    unsigned long sum = 0;
    for (int i = 0; i < 60000; i++) {
        s = s * 1103515245 + 12345;
        int j = (s >> 8) % 512;
        if (slots[j]) {
            unsigned char *p = slots[j];
            for (size_t k = 0; k < sz[j]; k += 97) sum += p[k] == (unsigned char)(sz[j] + k);
            free(slots[j]);
            slots[j] = 0;
            continue;
        }
        size_t n = 1 + ((s >> 12) % 9 == 0 ? (s >> 4) % 300000 : (s >> 4) % 2000);
        int mode = (s >> 20) % 4;
        size_t align = (size_t)64 << ((s >> 24) % 6);
        unsigned char *p = mode == 0 ? calloc(1, n)
                           : mode == 1 ? memalign(align, n)
                           : mode == 2 ? realloc(malloc(n / 2 + 1), n)
                                       : malloc(n);
        if (!p) return (void *)-1;
        if (mode == 0)
            for (size_t k = 0; k < n; k++)
                if (p[k]) return (void *)-2;
        if (mode == 1 && ((uintptr_t)p & (align - 1))) return (void *)-3;
        if (malloc_usable_size(p) < n) return (void *)-4;
        for (size_t k = 0; k < n; k += 97) p[k] = (unsigned char)(n + k);
        slots[j] = p;
        sz[j] = n;
    }
    for (int j = 0; j < 512; j++) free(slots[j]);
    return (void *)sum;
}

int main(void) {
    pthread_t t[4];
    unsigned long total = 0;
    for (int i = 0; i < 4; i++) pthread_create(&t[i], 0, work, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        if ((long)r < 0) {
            printf("thread %d: check %ld failed\n", i, -(long)r);
            return 1;
        }
        total += (unsigned long)r;
    }
    printf("checked %lu\n", total);
    return 0;
}
