/* mincore's checks, in Linux's order (issue #14 part A; stress-ng's mincore stressor checks
 * them): unaligned start EINVAL, unmapped page ENOMEM, bad vector EFAULT, zero length 0. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void t(const char *what, void *a, size_t l, unsigned char *v) {
    errno = 0;
    int r = mincore(a, l, v);
    printf("%-28s %d %s\n", what, r, r ? strerror(errno) : "");
}

int main(void) {
    unsigned char v[16];
    char *m = mmap(0, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(m + 2 * 4096, 4096);
    t("NULL, 0, NULL", 0, 0, 0);
    t("NULL, 4096, v", 0, 4096, v);
    t("m, 0, NULL", m, 0, 0);
    t("m+1, 4096, v", m + 1, 4096, v);
    t("m, 4096, NULL", m, 4096, 0);
    t("m, 4 pages with a hole, v", m, 4 * 4096, v);
    t("m, 2 pages, v", m, 2 * 4096, v);
    t("m, 4096, read-only vector", m, 4096, (unsigned char *)"ro");
    t("heap", sbrk(0) - 4096, 4096, v);
    return 0;
}
