/* The LWK partition as the guest sees it: sched_getaffinity, OpenMP's default thread count,
 * sched_setaffinity inside and outside the partition, getcpu. Prints one fact per line. */
#define _GNU_SOURCE
#include <errno.h>
#include <omp.h>
#include <sched.h>
#include <stdio.h>

int main(void) {
    cpu_set_t s;
    CPU_ZERO(&s);
    if (sched_getaffinity(0, sizeof s, &s) != 0) return 1;
    int first = -1;
    for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
        if (CPU_ISSET(c, &s)) first = c;
    printf("cpus %d first %d\n", CPU_COUNT(&s), first);
    int n = 0;
#pragma omp parallel
    {
#pragma omp atomic
        n++;
    }
    printf("omp threads %d\n", n);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    printf("set first %d\n", sched_setaffinity(0, sizeof one, &one));
    printf("getcpu is first %d\n", sched_getcpu() == first);
    CPU_ZERO(&one);
    CPU_SET(CPU_SETSIZE - 1, &one);
    int r = sched_setaffinity(0, sizeof one, &one);
    printf("set outside %d %s\n", r, r ? (errno == EINVAL ? "EINVAL" : "other") : "-");
    return 0;
}
