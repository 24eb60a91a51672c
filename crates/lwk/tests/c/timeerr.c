/* Time, errno and exit codes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    struct timespec t0, t1, req = {0, 2000000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    nanosleep(&req, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long us = (t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000;
    printf("slept at least 2ms: %d\n", us >= 2000);
    struct timeval tv;
    gettimeofday(&tv, NULL);
    printf("realtime plausible: %d\n", tv.tv_sec > 1600000000 && time(NULL) + 1 >= tv.tv_sec); /* time() is tick-coarse */
    errno = 0;
    int fd = open("/nonexistent/x", O_RDONLY);
    printf("open: %d %s\n", fd, strerror(errno));
    printf("close(77): %d %s\n", close(77), strerror(errno));
    printf("pagesz %lu, uid match %d, secure %lu\n", getauxval(AT_PAGESZ), getauxval(AT_UID) == getuid(),
           getauxval(AT_SECURE));
    printf("random present %d, phdr present %d\n", getauxval(AT_RANDOM) != 0, getauxval(AT_PHDR) != 0);
    char exe[256] = {0};
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    printf("exe ends with timeerr: %d\n", n > 7 && strcmp(exe + n - 7, "timeerr") == 0);
    struct utsname u;
    uname(&u);
    printf("uname %s\n", u.sysname);
    printf("argc %d argv1 %s env %s\n", argc, argc > 1 ? argv[1] : "-", getenv("LWK_TEST_VAR"));
    printf("pid is positive and stable: %d\n", getpid() > 0 && getpid() == getpid());
    fflush(stdout);
    return argc > 2 ? atoi(argv[2]) : 0;
}
