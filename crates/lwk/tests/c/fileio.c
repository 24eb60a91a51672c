/* File I/O through delegated calls: open/write/lseek/read/fstat/rename/unlink, stdio, getdents. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    char path[512], path2[512];
    snprintf(path, sizeof path, "%s/a.txt", argv[1]);
    snprintf(path2, sizeof path2, "%s/b.txt", argv[1]);
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
    if (fd < 0) { perror("open"); return 1; }
    printf("first fd %d\n", fd);
    struct iovec iov[2] = {{"hello ", 6}, {"world\n", 6}};
    if (writev(fd, iov, 2) != 12) { perror("writev"); return 1; }
    for (int i = 0; i < 1000; i++) dprintf(fd, "line %d\n", i);
    struct stat st;
    fstat(fd, &st);
    printf("size %lld\n", (long long)st.st_size);
    lseek(fd, 0, SEEK_SET);
    char buf[64] = {0};
    read(fd, buf, 12);
    printf("read back: %s", buf);
    pread(fd, buf, 8, 12);
    buf[8] = 0;
    printf("pread: %s\n", buf);
    close(fd);
    if (rename(path, path2) != 0) { perror("rename"); return 1; }
    FILE *f = fopen(path2, "r");
    int lines = 0;
    char line[128];
    while (fgets(line, sizeof line, f)) lines++;
    fclose(f);
    printf("lines %d\n", lines);
    DIR *d = opendir(argv[1]);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) if (e->d_name[0] != '.') n++;
    closedir(d);
    printf("entries %d\n", n);
    unlink(path2);
    printf("exists after unlink: %d\n", access(path2, F_OK) == 0);
    int p[2];
    pipe(p);
    write(p[1], "pipe!", 5);
    read(p[0], buf, 5);
    buf[5] = 0;
    printf("%s\n", buf);
    return 0;
}
