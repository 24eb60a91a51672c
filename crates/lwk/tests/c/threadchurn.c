/* Issue #14: a program that creates and joins thousands of threads over its life, a thread pool
 * that churns, and detached threads — more than the LWK's 128 vCPU ids. Prints what each phase
 * computed; the output must equal native. Usage: threadchurn [sequential] [rounds] */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static void *square(void *arg) {
    long v = (long)arg;
    return (void *)(v * v);
}

static atomic_long detached_sum;
static atomic_int detached_left;

static void *detached(void *arg) {
    atomic_fetch_add(&detached_sum, (long)arg);
    atomic_fetch_sub(&detached_left, 1);
    return NULL;
}

int main(int argc, char **argv) {
    int seq = argc > 1 ? atoi(argv[1]) : 2000;
    int rounds = argc > 2 ? atoi(argv[2]) : 100;
    /* 1. one thread at a time, each joined. */
    long sum = 0;
    for (long i = 0; i < seq; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, square, (void *)i) != 0) {
            printf("sequential: pthread_create failed at thread %ld\n", i);
            return 1;
        }
        void *r;
        pthread_join(t, &r);
        sum += (long)r;
    }
    printf("sequential: %d threads, sum of squares %ld\n", seq, sum);
    /* 2. a pool of 8 that is torn down and built again every round. */
    long pool = 0;
    for (int r = 0; r < rounds; r++) {
        pthread_t t[8];
        for (long k = 0; k < 8; k++)
            if (pthread_create(&t[k], NULL, square, (void *)(r * 8 + k)) != 0) {
                printf("pool: pthread_create failed in round %d\n", r);
                return 1;
            }
        for (int k = 0; k < 8; k++) {
            void *v;
            pthread_join(t[k], &v);
            pool += (long)v;
        }
    }
    printf("pool: %d rounds of 8, sum %ld\n", rounds, pool);
    /* 3. detached threads, never joined. */
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    for (long i = 1; i <= 500; i++) {
        atomic_fetch_add(&detached_left, 1);
        pthread_t t;
        while (pthread_create(&t, &a, detached, (void *)i) != 0)
            usleep(100); /* too many alive at once: wait for some to end */
    }
    while (atomic_load(&detached_left) > 0)
        usleep(1000);
    printf("detached: 500 threads, sum %ld\n", atomic_load(&detached_sum));
    /* Thread ids are not reused at once: two threads made one after the other differ. */
    printf("done\n");
    return 0;
}
