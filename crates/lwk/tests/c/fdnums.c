/* Issue #16: the descriptors a guest's calls create get the lowest free numbers, as natively,
 * even while a VMM helper thread holds a temporary descriptor in the guest's range (the signal
 * pump opening its signalfd at start-up; MULTIOS_LWK_TEST_FD_RACE_MS widens that moment). Prints
 * the number each call got, then closes them all. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int main(void) {
    /* Into the helper's moment: the pump starts beside the guest's first instructions. */
    struct timespec t = {0, 50 * 1000 * 1000};
    nanosleep(&t, 0);
    int p[2];
    if (pipe(p) != 0) return 2;
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    int d = dup(0);
    int e = eventfd(0, 0);
    int n = open("/dev/null", O_RDONLY);
    char path[64];
    snprintf(path, sizeof path, "/tmp/multios-fdnums.%d", (int)getpid());
    int c = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
    int f = fcntl(0, F_DUPFD, 0);
    printf("pipe %d %d socket %d dup %d eventfd %d open %d create %d dupfd %d\n", p[0], p[1], s, d, e, n,
           c, f);
    unlink(path);
    for (int i = 3; i < 12; i++) close(i);
    return 0;
}
