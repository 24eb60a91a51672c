/* The rewrite cache (docs/EMULATOR.md, "Rewrite cache"): what rewrite.c found in one executable
 * mapping of a file — the offsets of the `syscall` instructions, and how many 0f 05 pairs it could
 * not classify — kept in a file so that the next exec of the same program patches those sites
 * without scanning and decoding the mapping again. Classifying a large image is the eager
 * interception's whole start-up cost: gcc's cc1 (25 MB of text) took ≈ 140 ms of CPU for each
 * compilation of a `make`, where the compiler itself ran ≈ 10 ms.
 *
 * An entry is named after a hash of its key and holds the key itself, which is checked:
 *   the file's device, inode, size, modification and change times (a file rewritten in place,
 *   renamed over or touched gets a new key), and the mapping's file offset and length.
 * The directory is chosen by multios (a private directory per build of this library, so a library
 * that classifies differently never reads an older one's entries); an entry is used only if it is
 * a regular file of this user that no one else can write. A site read from an entry is patched
 * only where the bytes are 0f 05 (patch() in rewrite.c checks), so a stale entry can at worst
 * leave a site alone. Entries are written under a temporary name and renamed, so a reader never
 * sees half of one. All calls go through multios_xsys (not counted, not rewritten). */
#include "preload.h"
#include "rwcache.h"
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#define RWC_MAGIC 0x3243575243534f4dULL /* "MOSCRWC2", little-endian */

HIDDEN char multios_rw_cache[MULTIOS_PRELOAD_PATH_MAX];

struct rwc_head {
    uint64_t magic;
    struct rwc_key key;
    uint64_t nsites; /* offsets from the mapping's start follow, 8 bytes each */
    uint64_t unsure;
    uint64_t nnever; /* then the sites never to rewrite, 8 bytes each */
};

HIDDEN int multios_rwc_key(int fd, uint64_t off, uint64_t len, struct rwc_key *k) {
    struct stat sb;
    if (!multios_rw_cache[0] || multios_xsys(SYS_fstat, fd, (long)&sb, 0, 0, 0, 0) != 0 || !S_ISREG(sb.st_mode))
        return 0;
    memset(k, 0, sizeof *k);
    k->dev = sb.st_dev;
    k->ino = sb.st_ino;
    k->size = (uint64_t)sb.st_size;
    k->mtime_s = (uint64_t)sb.st_mtim.tv_sec;
    k->mtime_ns = (uint64_t)sb.st_mtim.tv_nsec;
    k->ctime_s = (uint64_t)sb.st_ctim.tv_sec;
    k->ctime_ns = (uint64_t)sb.st_ctim.tv_nsec;
    k->off = off;
    k->len = len;
    return 1;
}

/* DIR/HASH.rw (with `suffix` appended) into `path`; 0 if it does not fit. */
static int entry_path(const struct rwc_key *k, const char *suffix, char *path, size_t cap) {
    uint64_t h = 0xcbf29ce484222325ULL;
    const unsigned char *b = (const unsigned char *)k;
    for (size_t i = 0; i < sizeof *k; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    size_t dl = strnlen(multios_rw_cache, sizeof multios_rw_cache), sl = strlen(suffix);
    if (dl + 1 + 16 + 3 + sl + 1 > cap)
        return 0;
    memcpy(path, multios_rw_cache, dl);
    char *p = path + dl;
    *p++ = '/';
    for (int i = 15; i >= 0; i--)
        *p++ = "0123456789abcdef"[(h >> (4 * i)) & 0xf];
    memcpy(p, ".rw", 3);
    memcpy(p + 3, suffix, sl + 1);
    return 1;
}

static int read_all(int fd, void *buf, uint64_t len) {
    uint64_t got = 0;
    while (got < len) {
        long r = multios_xsys(SYS_read, fd, (long)((char *)buf + got), (long)(len - got), 0, 0, 0);
        if (r <= 0)
            return 0;
        got += (uint64_t)r;
    }
    return 1;
}

static int write_all(int fd, const void *buf, uint64_t len) {
    uint64_t put = 0;
    while (put < len) {
        long r = multios_xsys(SYS_write, fd, (long)((const char *)buf + put), (long)(len - put), 0, 0, 0);
        if (r <= 0)
            return 0;
        put += (uint64_t)r;
    }
    return 1;
}

/* 1 when every offset of `v` leaves room for a 2-byte instruction in a mapping of `len` bytes. */
static int inside(const uint64_t *v, uint64_t n, uint64_t len) {
    for (uint64_t i = 0; i < n; i++)
        if (len < 2 || v[i] > len - 2)
            return 0; /* a site outside the mapping: not an entry this library wrote */
    return 1;
}

HIDDEN long multios_rwc_load(const struct rwc_key *k, struct rwc_sites *s, uint64_t *unsure) {
    char path[MULTIOS_PRELOAD_PATH_MAX + 32];
    if (!entry_path(k, "", path, sizeof path))
        return -1;
    int fd = (int)multios_xsys(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0, 0, 0);
    if (fd < 0)
        return -1;
    long n = -1;
    struct stat sb;
    struct rwc_head h;
    if (multios_xsys(SYS_fstat, fd, (long)&sb, 0, 0, 0, 0) == 0 && S_ISREG(sb.st_mode) &&
        sb.st_uid == (uid_t)multios_xsys(SYS_geteuid, 0, 0, 0, 0, 0, 0) && !(sb.st_mode & 022) &&
        read_all(fd, &h, sizeof h) && h.magic == RWC_MAGIC && !memcmp(&h.key, k, sizeof *k) && h.nsites <= s->cap &&
        h.nnever <= s->never_cap && (uint64_t)sb.st_size == sizeof h + (h.nsites + h.nnever) * 8 &&
        read_all(fd, s->sites, h.nsites * 8) && read_all(fd, s->never, h.nnever * 8) &&
        inside(s->sites, h.nsites, k->len) && inside(s->never, h.nnever, k->len)) {
        n = (long)h.nsites;
        s->n = h.nsites;
        s->nnever = h.nnever;
        *unsure = h.unsure;
    }
    multios_xsys(SYS_close, fd, 0, 0, 0, 0, 0);
    return n;
}

HIDDEN int multios_rwc_store(const struct rwc_key *k, const struct rwc_sites *s, uint64_t unsure) {
    char tmp[MULTIOS_PRELOAD_PATH_MAX + 64], path[MULTIOS_PRELOAD_PATH_MAX + 32], sfx[32] = ".";
    long pid = multios_xsys(SYS_getpid, 0, 0, 0, 0, 0, 0);
    char *q = sfx + 1, digits[24];
    int nd = 0;
    do
        digits[nd++] = (char)('0' + pid % 10);
    while ((pid /= 10) > 0 && nd < 20);
    while (nd)
        *q++ = digits[--nd];
    memcpy(q, ".tmp", 5);
    if (!entry_path(k, "", path, sizeof path) || !entry_path(k, sfx, tmp, sizeof tmp))
        return 0;
    int fd = (int)multios_xsys(SYS_openat, AT_FDCWD, (long)tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                               0600, 0, 0);
    if (fd < 0)
        return 0;
    struct rwc_head h = {RWC_MAGIC, *k, s->n, unsure, s->nnever};
    int ok = write_all(fd, &h, sizeof h) && write_all(fd, s->sites, s->n * 8) && write_all(fd, s->never, s->nnever * 8);
    multios_xsys(SYS_close, fd, 0, 0, 0, 0, 0);
    if (ok)
        ok = multios_xsys(SYS_rename, (long)tmp, (long)path, 0, 0, 0, 0) == 0;
    if (!ok)
        multios_xsys(SYS_unlink, (long)tmp, 0, 0, 0, 0, 0);
    return ok;
}
