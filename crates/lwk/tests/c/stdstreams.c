/* Issue #16: the standard streams a program finds, and a file it opens on a number it freed.
 * argv[1]: a report file (stdout may be closed). Writes "fd0 open|closed", … for fds 0–2, then
 * closes fd 2, opens argv[2] (which gets fd 2, as a daemon's log does), asks an ioctl nobody
 * knows (the LWK reports that on its own stderr, never into this file), writes "mine\n" to the
 * file and notes the number it got. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3)
        return 2;
    FILE *rep = fopen(argv[1], "w");
    if (!rep)
        return 3;
    for (int fd = 0; fd < 3; fd++)
        fprintf(rep, "fd%d %s\n", fd, fcntl(fd, F_GETFD) < 0 && errno == EBADF ? "closed" : "open");
    fflush(rep);
    close(2);
    int log = open(argv[2], O_CREAT | O_TRUNC | O_WRONLY, 0644);
    ioctl(log, 0x7e57ab1e, 0);
    if (write(log, "mine\n", 5) != 5)
        return 4;
    fprintf(rep, "log on fd %d\n", log);
    return fclose(rep) == 0 ? 0 : 5;
}
