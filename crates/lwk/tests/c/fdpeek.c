/* Issue #16: a number the guest closed must not be found holding a VMM descriptor, even while a
 * VMM thread holds a temporary descriptor in the guest's range — here the vCPU and the host
 * thread made for a new guest thread (MULTIOS_LWK_TEST_FD_RACE_MS widens that moment). Closes
 * every descriptor from 3 up; one thread asks fcntl(F_GETFD), fstat and lseek about 3..15 for
 * 1.5 s while the main thread creates and joins three more; prints how many answers said the
 * number was open. Natively: none. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static long asked, open_seen;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *probe(void *unused) {
    (void)unused;
    double t0 = now();
    while (now() - t0 < 1.5) {
        for (int fd = 3; fd < 16; fd++) {
            struct stat st;
            open_seen += fcntl(fd, F_GETFD) >= 0;
            open_seen += fstat(fd, &st) == 0;
            open_seen += lseek(fd, 0, SEEK_CUR) >= 0;
            asked += 3;
        }
    }
    return NULL;
}

static void *nothing(void *unused) { return unused; }

int main(void) {
    for (int fd = 3; fd < 1024; fd++) close(fd);
    pthread_t p, t;
    if (pthread_create(&p, NULL, probe, NULL)) return 2;
    struct timespec pause = {0, 100 * 1000 * 1000};
    for (int i = 0; i < 3; i++) {
        nanosleep(&pause, NULL);
        if (pthread_create(&t, NULL, nothing, NULL) || pthread_join(t, NULL)) return 2;
    }
    pthread_join(p, NULL);
    printf("open answers %ld (%s)\n", open_seen, asked > 0 ? "asked" : "not asked");
    return 0;
}
