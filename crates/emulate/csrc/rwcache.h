/* The rewrite cache (rwcache.c): the sites rewrite.c found in an executable mapping of a file. */
#ifndef MULTIOS_RWCACHE_H
#define MULTIOS_RWCACHE_H
#include <stdint.h>

/* What identifies a mapping's bytes: the file (device, inode, size, times) and the mapped range. */
struct rwc_key {
    uint64_t dev, ino, size, mtime_s, mtime_ns, ctime_s, ctime_ns, off, len;
};

/* The key of the mapping of `fd` at file offset `off`, `len` bytes: 1, or 0 when there is no cache
 * (no directory configured) or `fd` is not a regular file. */
int multios_rwc_key(int fd, uint64_t off, uint64_t len, struct rwc_key *k)
    __attribute__((visibility("hidden")));

/* The sites of one mapping, as offsets from its start: the `syscall` instructions to rewrite, and
 * those that must never be rewritten (their function uses the red zone; rewrite.c). */
struct rwc_sites {
    uint64_t *sites, n, cap;
    uint64_t *never, nnever, never_cap;
};

/* The entry of `k` into `s` (at most the capacities), its unsure count into `*unsure`; returns the
 * number of sites, or -1 when there is no valid entry. */
long multios_rwc_load(const struct rwc_key *k, struct rwc_sites *s, uint64_t *unsure)
    __attribute__((visibility("hidden")));

/* Stores the entry of `k`; 1 if it was written. */
int multios_rwc_store(const struct rwc_key *k, const struct rwc_sites *s, uint64_t unsure)
    __attribute__((visibility("hidden")));
#endif
