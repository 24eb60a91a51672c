/* Issue #14: a block device (or a file on one) mapped MAP_SHARED and written through the mapping,
 * and O_DIRECT reads and writes. Usage: blockdev PATH SEED. Writes, for page k of the first
 * 256 KiB, "page k of SEED" through a MAP_SHARED mapping (msync'ed), then with O_DIRECT writes
 * 64 KiB at offset 256 KiB from an aligned buffer, reads it back with O_DIRECT and compares; prints
 * a checksum of the first 320 KiB read with O_DIRECT. The test reads PATH natively afterwards. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAPPED (256 * 1024)
#define DIRECT (64 * 1024)

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    const char *path = argv[1], *seed = argv[2];
    int fd = open(path, O_RDWR);
    if (fd < 0) {
        printf("open %s: %s\n", path, strerror(errno));
        return 3;
    }
    char *m = mmap(NULL, MAPPED, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        printf("mmap: %s\n", strerror(errno));
        return 4;
    }
    for (int k = 0; k < MAPPED / 4096; k++) snprintf(m + 4096 * k, 64, "page %d of %s", k, seed);
    printf("msync: %d\n", msync(m, MAPPED, MS_SYNC));
    munmap(m, MAPPED);

    int dfd = open(path, O_RDWR | O_DIRECT);
    if (dfd < 0) {
        printf("open O_DIRECT: %s\n", strerror(errno));
        return 5;
    }
    char *w, *r;
    if (posix_memalign((void **)&w, 4096, DIRECT) || posix_memalign((void **)&r, 4096, MAPPED + DIRECT))
        return 6;
    for (int i = 0; i < DIRECT; i++) w[i] = (char)(i * 7 + seed[0]);
    printf("O_DIRECT pwrite: %zd\n", pwrite(dfd, w, DIRECT, MAPPED));
    printf("O_DIRECT pread: %zd\n", pread(dfd, r, MAPPED + DIRECT, 0));
    printf("O_DIRECT data back: %s\n", memcmp(r + MAPPED, w, DIRECT) == 0 ? "same" : "different");
    printf("mapped page 5 read with O_DIRECT: %s\n", r + 5 * 4096);
    /* An unaligned O_DIRECT buffer: EINVAL, as natively. */
    ssize_t bad = pread(dfd, r + 1, 4096, 0);
    printf("O_DIRECT unaligned: %zd (%s)\n", bad, bad < 0 ? strerror(errno) : "ok");
    unsigned long sum = 0;
    for (int i = 0; i < MAPPED + DIRECT; i++) sum = sum * 31 + (unsigned char)r[i];
    printf("checksum %lx\n", sum);
    close(dfd);
    close(fd);
    return 0;
}
