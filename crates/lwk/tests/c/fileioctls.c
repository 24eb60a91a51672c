/* Issue #16: the file ioctls cp, lsattr and chattr make (FICLONE, FICLONERANGE, FIDEDUPERANGE,
 * FS_IOC_GETFLAGS/SETFLAGS, FS_IOC_FSGETXATTR, FS_IOC_GETVERSION), with good and bad fds (one at
 * the descriptor limit: in the LWK at or above the VMM's floor). Prints results and errno names
 * only: the same natively and in the LWK. Run in a scratch directory. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <unistd.h>

#define T(x) do { errno = 0; long r_ = (long)(x); printf("%-48.48s r=%ld %s\n", #x, r_ < 0 ? -1L : r_ > 0 ? 1L : 0L, r_ < 0 ? strerrorname_np(errno) : "-"); } while (0)

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    int limit = (int)rl.rlim_cur;
    int src = open("src", O_RDWR | O_CREAT | O_TRUNC, 0644);
    int dst = open("dst", O_RDWR | O_CREAT | O_TRUNC, 0644);
    char buf[8192];
    memset(buf, 'x', sizeof buf);
    if (write(src, buf, sizeof buf) != sizeof buf) return 1;
    fsync(src);
    T(ioctl(dst, FICLONE, src));
    T(ioctl(dst, FICLONE, 1000));
    T(ioctl(dst, FICLONE, limit));
    T(ioctl(dst, FICLONE, 0x7fffffff));
    T(ioctl(dst, FICLONE, -1));
    struct file_clone_range cr = {.src_fd = src, .src_offset = 0, .src_length = 4096, .dest_offset = 0};
    T(ioctl(dst, FICLONERANGE, &cr));
    cr.src_fd = limit;
    T(ioctl(dst, FICLONERANGE, &cr));
    cr.src_fd = (1LL << 32) + limit;
    T(ioctl(dst, FICLONERANGE, &cr));
    T(ioctl(dst, FICLONERANGE, (void *)16));
    struct file_dedupe_range *dr = calloc(1, sizeof *dr + 3 * sizeof(struct file_dedupe_range_info));
    dr->src_offset = 0;
    dr->src_length = 4096;
    dr->dest_count = 3;
    dr->info[0].dest_fd = dst;
    dr->info[1].dest_fd = limit;
    dr->info[2].dest_fd = 1000;
    T(ioctl(src, FIDEDUPERANGE, dr));
    for (int i = 0; i < 3; i++)
        printf("dedupe info %d: fd kept %d status %s\n", i,
               dr->info[i].dest_fd == (i == 0 ? dst : i == 1 ? limit : 1000),
               dr->info[i].status < 0 ? strerrorname_np(-dr->info[i].status) : "ok");
    dr->dest_count = 200; /* more than a page: ENOMEM */
    T(ioctl(src, FIDEDUPERANGE, dr));
    int flags = -1;
    T(ioctl(src, FS_IOC_GETFLAGS, &flags));
    printf("flags read: %d\n", flags != -1);
    T(ioctl(src, FS_IOC_SETFLAGS, &flags));
    T(ioctl(src, FS_IOC_GETFLAGS, (void *)16));
    struct fsxattr fx;
    memset(&fx, 0xff, sizeof fx);
    T(ioctl(src, FS_IOC_FSGETXATTR, &fx));
    printf("fsxattr projid %u\n", fx.fsx_projid);
    T(ioctl(src, FS_IOC_FSSETXATTR, &fx));
    int version = 0;
    T(ioctl(src, FS_IOC_GETVERSION, &version));
    T(ioctl(limit, FS_IOC_GETFLAGS, &flags));
    return 0;
}
