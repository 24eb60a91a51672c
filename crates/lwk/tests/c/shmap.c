/* Shared file mappings: stores reach the file, two mappings of one file share their pages, a
 * write() is seen through a mapping made before it, msync, and the range reads zero once it is
 * unmapped and mapped again anonymously. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "shmap.dat";
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, 3 * 4096) != 0) return 1;
    char *a = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    char *b = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 4096);
    if (a == MAP_FAILED || b == MAP_FAILED) return 2;
    strcpy(a + 4096, "written through mapping a");
    printf("b sees a: %s\n", b);
    printf("msync: %d\n", msync(a, 3 * 4096, MS_SYNC));
    char buf[64] = {0};
    pread(fd, buf, 25, 4096);
    printf("file has: %s\n", buf);
    pwrite(fd, "written with pwrite", 20, 2 * 4096);
    printf("a sees pwrite: %s\n", a + 2 * 4096);
    munmap(b, 4096);
    munmap(a, 3 * 4096);
    char *z = mmap(a, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    int zero = 1;
    for (int i = 0; i < 3 * 4096; i++) zero &= z[i] == 0;
    printf("anonymous again reads zero: %d\n", zero);
    z[0] = 'x'; /* must not reach the file */
    pread(fd, buf, 1, 0);
    printf("file byte 0 after an anonymous store: %d\n", buf[0]);
    close(fd);
    unlink(path);
    return 0;
}
