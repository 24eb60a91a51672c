/* Page-fault costs for the projection of `bench multiverse` (issue #13), natively and in the LWK:
 *   first_touch_ns: first write to each 4 KiB page of fresh anonymous memory (N MiB, 2 MiB-
 *     aligned): natively a page fault that allocates and zeroes a page; in the LWK a KVM fault
 *     that makes the host allocate (a 2 MiB page where it can) and builds the shadow entry;
 *   shadow_fault_ns: in the LWK, a write to a page whose host page exists but whose shadow
 *     entry KVM has dropped (the range behind 4 KiB guest tables, dropped by taking write access
 *     away and giving it back): the KVM fault alone. Natively the same loop after the same
 *     mprotect pair costs a minor fault per page (the PTEs were made read-only);
 *   kvm_fault_ns: in the LWK, one KVM fault alone: the same dropped shadow entries, but only
 *     one page of each aligned group of 8 touched (KVM's fault fills the shadow entries of the
 *     group's other pages whose host pages exist: its prefetch), per touch.
 * Each 2 MiB of the second region starts with a PROT_NONE page, so the guest maps it with 4 KiB
 * tables.
 * With a second argument (`touchbench N populate`, the `touch` term of `validate`, issue #15), a
 * last phase prints a second line:
 *   populate_map_ns: N chunks of 1 MiB + 4 KiB of fresh anonymous memory mapped one by one, the
 *     mmap calls' time per page mapped — in the LWK with `--populate-at-map` on, the call makes
 *     the chunk's host pages (each chunk lies under the per-range cap);
 *   populated_touch_ns: then the first write to each page of the chunks, per page — natively a
 *     page fault, in the LWK with at-map on a touch of a page whose host page exists. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#define M2 (2ul << 20)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static char *aligned(size_t len) {
    char *raw = mmap(0, len + M2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) exit(1);
    return (char *)(((uintptr_t)raw + M2 - 1) & ~(M2 - 1));
}

int main(int argc, char **argv) {
    size_t len = (size_t)(argc > 1 ? atol(argv[1]) : 64) << 20, pages = len / 4096;
    char *a = aligned(len);
    double t0 = now();
    for (size_t i = 0; i < len; i += 4096) a[i] = 1;
    double first = (now() - t0) / pages;

    char *b = aligned(len);
    for (size_t c = 0; c < len; c += M2) mmap(b + c, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    size_t n = 0;
    for (size_t i = 0; i < len; i += 4096)
        if (i % M2) b[i] = 1, n++;
    for (size_t c = 0; c < len; c += M2) {
        mprotect(b + c + 4096, M2 - 4096, PROT_READ);
        mprotect(b + c + 4096, M2 - 4096, PROT_READ | PROT_WRITE);
    }
    t0 = now();
    for (size_t i = 0; i < len; i += 4096)
        if (i % M2) b[i] = 2;
    double shadow = (now() - t0) / n;
    t0 = now();
    for (size_t i = 0; i < len; i += 4096)
        if (i % M2) b[i] = 3;
    double warm = (now() - t0) / n;

    for (size_t c = 0; c < len; c += M2) {
        mprotect(b + c + 4096, M2 - 4096, PROT_READ);
        mprotect(b + c + 4096, M2 - 4096, PROT_READ | PROT_WRITE);
    }
    size_t g = 0;
    t0 = now();
    for (size_t i = 4096; i < len; i += 8 * 4096) b[i] = 4, g++;
    double sparse = (now() - t0) / g;
    t0 = now();
    for (size_t i = 4096; i < len; i += 8 * 4096) b[i] = 5;
    double sparse_warm = (now() - t0) / g;
    printf("first_touch_ns %.0f shadow_fault_ns %.0f warm_ns %.0f kvm_fault_ns %.0f pages %zu\n", first,
           shadow - warm, warm, sparse - sparse_warm, pages);
    if (argc > 2) {
        size_t chunk = (1ul << 20) + 4096, chunks = len >> 20, cpages = chunk / 4096;
        char **c = malloc(chunks * sizeof *c);
        if (!c) return 1;
        double map = 0;
        for (size_t k = 0; k < chunks; k++) {
            t0 = now();
            c[k] = mmap(0, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            map += now() - t0;
            if (c[k] == MAP_FAILED) return 1;
        }
        t0 = now();
        for (size_t k = 0; k < chunks; k++)
            for (size_t i = 0; i < chunk; i += 4096) c[k][i] = 6;
        double touch = now() - t0;
        printf("populate_map_ns %.1f populated_touch_ns %.0f chunk_pages %zu chunks %zu\n", map / (chunks * cpages),
               touch / (chunks * cpages), cpages, chunks);
    }
    return 0;
}
