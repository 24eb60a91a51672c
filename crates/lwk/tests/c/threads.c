/* pthreads: each thread is a vCPU; mutex and join go through futex and CLONE_CHILD_CLEARTID. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define N 4
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static long counter = 0;
static int ready = 0;
static __thread long mine = 0; /* TLS: each thread's FS base */

static void *work(void *arg) {
    long id = (long)arg;
    for (int i = 0; i < 20000; i++) {
        mine++;
        pthread_mutex_lock(&lock);
        counter++;
        pthread_mutex_unlock(&lock);
    }
    pthread_mutex_lock(&lock);
    ready++;
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&lock);
    return (void *)(id * 100 + (mine == 20000));
}

int main(void) {
    pthread_t t[N];
    for (long i = 0; i < N; i++)
        if (pthread_create(&t[i], NULL, work, (void *)i) != 0) { printf("create failed\n"); return 1; }
    pthread_mutex_lock(&lock);
    while (ready < N) pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    long sum = 0;
    for (int i = 0; i < N; i++) { void *r; pthread_join(t[i], &r); sum += (long)r; }
    printf("counter %ld, results %ld, main tls %ld\n", counter, sum, mine);
    return 0;
}
