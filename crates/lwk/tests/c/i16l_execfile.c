/* Issue #16: execve of a file that is not a regular file — a FIFO, a socket, a character device,
 * with x bits — or of a program whose interpreter (a `#!` line, or PT_INTERP: argv[2], linked
 * with --dynamic-linker=DIR/fifo) is one is EACCES at once, as Linux's may_open says for MAY_EXEC.
 * The LWK opened such a file by name without O_NONBLOCK: a FIFO hung the VMM in its open (holding
 * the lock of the guest's fd range), a device gave ENOEXEC, a socket ENXIO.
 * Usage: i16l_execfile DIR [PROGRAM-WHOSE-PT_INTERP-IS-DIR/fifo] */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

static void try(const char *what, const char *path) {
    char *argv[] = {(char *)path, 0};
    execv(path, argv);
    printf("%s: %s\n", what, strerror(errno));
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    char fifo[512], sock[512], dev[512], script[512];
    snprintf(fifo, sizeof fifo, "%s/fifo", argv[1]);
    snprintf(sock, sizeof sock, "%s/sock", argv[1]);
    snprintf(dev, sizeof dev, "%s/dev", argv[1]);
    snprintf(script, sizeof script, "%s/script", argv[1]);
    unlink(fifo); unlink(sock); unlink(dev); unlink(script);
    if (mkfifo(fifo, 0755) || chmod(fifo, 0755)) { perror("mkfifo"); return 2; }
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", sock);
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) || chmod(sock, 0755)) { perror("socket"); return 2; }
    /* /dev/null's numbers: harmless if it were opened. */
    if (mknod(dev, S_IFCHR | 0755, makedev(1, 3)) || chmod(dev, 0755)) { perror("mknod (needs root)"); return 2; }
    FILE *f = fopen(script, "w");
    if (!f) { perror("script"); return 2; }
    fprintf(f, "#!%s\n", fifo);
    fclose(f);
    chmod(script, 0755);
    try("fifo", fifo);
    try("socket", sock);
    try("char device", dev);
    try("script with a fifo interpreter", script);
    if (argc > 2) try("program with a fifo PT_INTERP", argv[2]);
    /* A directory, and a regular file without x bits, as before. */
    try("directory", argv[1]);
    chmod(script, 0644);
    try("mode 644 script", script);
    printf("done\n");
    return 0;
}
