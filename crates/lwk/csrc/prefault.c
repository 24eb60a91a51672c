/* multios LWK function overrides, `mmap` with prefaulting ("prefault", issue #13): Multiverse's
 * Fig. 12 change — Racket's collector mapping its memory with MAP_POPULATE — made without
 * touching the runtime. Every anonymous, private, writable mapping the program asks for is
 * populated when it is made (madvise MADV_POPULATE_WRITE, which the LWK serves by allocating the
 * host pages behind the range in one call), instead of by one fault per page at first touch —
 * in the LWK a KVM shadow fault plus a host fault. Natively the same call populates the
 * process's own page tables. The cost is the memory of pages the program never touches. */
#define _GNU_SOURCE
#include <stddef.h>
#include <sys/mman.h>
#include <sys/types.h>

#include "lwk_syscall.h"
#include "overrides.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

LWK_SYSCALL(sys_madvise, 28)

typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);
static mmap_fn real_mmap, real_mmap64;
static int on;

static void *populated(void *r, size_t len, int prot, int flags) {
    if (on && r != MAP_FAILED && (flags & MAP_ANONYMOUS) && !(flags & MAP_SHARED) && (prot & PROT_WRITE))
        sys_madvise((long)r, (long)len, MADV_POPULATE_WRITE, 0, 0, 0);
    return r;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    return populated(real_mmap(addr, len, prot, flags, fd, off), len, prot, flags);
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    return populated((real_mmap64 ? real_mmap64 : real_mmap)(addr, len, prot, flags, fd, off), len, prot, flags);
}

void multios_prefault_init(const char *list) {
    real_mmap = (mmap_fn)multios_next("mmap");
    real_mmap64 = (mmap_fn)multios_next("mmap64");
    on = real_mmap && multios_listed(list, "mmap");
}
