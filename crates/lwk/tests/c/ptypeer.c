/* Issue #14: TIOCGPTPEER as Linux gives it — run natively and in the LWK, the output must be the
 * same: a pty master (posix_openpt) opens its slave with ioctl(TIOCGPTPEER, flags), a new fd with
 * the flags given; text written through the slave is read on the master (the line discipline
 * turns "\n" into "\r\n"), and the other way round; a bad fd and a non-master give Linux's
 * errors. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

static void show(const char *what, const char *buf, ssize_t n) {
    printf("%s: %zd \"", what, n);
    for (ssize_t k = 0; k < n; k++) {
        if (buf[k] == '\r') printf("\\r");
        else if (buf[k] == '\n') printf("\\n");
        else putchar(buf[k]);
    }
    printf("\"\n");
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    if (m < 0 || grantpt(m) != 0 || unlockpt(m) != 0) {
        printf("posix_openpt: %s\n", strerror(errno));
        return 1;
    }
    int s = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
    printf("TIOCGPTPEER: %s, a new fd: %d, cloexec=%d, a tty: %d\n", s >= 0 ? "ok" : strerror(errno),
           s > m, (fcntl(s, F_GETFD) & FD_CLOEXEC) != 0, isatty(s));
    char name[64];
    printf("same terminal as ptsname: %d\n", ptsname_r(m, name, sizeof name) == 0 && strcmp(ttyname(s), name) == 0);
    const char *msg = "hello through the peer\n";
    printf("write slave: %zd\n", write(s, msg, strlen(msg)));
    char buf[128];
    struct pollfd p = {.fd = m, .events = POLLIN};
    poll(&p, 1, 5000);
    ssize_t n = read(m, buf, sizeof buf);
    show("read master", buf, n);
    /* Raw mode on the slave, then master → slave. */
    struct termios t;
    tcgetattr(s, &t);
    cfmakeraw(&t);
    tcsetattr(s, TCSANOW, &t);
    write(m, "ping", 4);
    p.fd = s;
    poll(&p, 1, 5000);
    n = read(s, buf, sizeof buf);
    show("read slave", buf, n);
    int plain = ioctl(m, TIOCGPTPEER, O_RDWR);
    printf("without O_CLOEXEC: cloexec=%d\n", (fcntl(plain, F_GETFD) & FD_CLOEXEC) != 0);
    errno = 0;
    int r = ioctl(s, TIOCGPTPEER, O_RDWR);
    printf("on the slave: %d %s\n", r, strerror(errno));
    errno = 0;
    r = ioctl(999, TIOCGPTPEER, O_RDWR);
    printf("on a bad fd: %d %s\n", r, strerror(errno));
    int pipefd[2];
    pipe(pipefd);
    errno = 0;
    r = ioctl(pipefd[0], TIOCGPTPEER, O_RDWR);
    printf("on a pipe: %d %s\n", r, strerror(errno));
    close(plain);
    close(s);
    close(m);
    printf("done\n");
    return 0;
}
