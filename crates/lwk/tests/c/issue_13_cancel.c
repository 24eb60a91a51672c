/* pthread_cancel under lwk-threads (issue #13): a cancelled pooled thread is joinable and its
   result is PTHREAD_CANCELED (the join used to hang: the worker died without telling the pool);
   the pool goes on making threads; a detached cancelled thread is forgotten. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static void *sleeper(void *a) { (void)a; for (;;) pause(); return NULL; }
static void *quick(void *a) { return a; }
static int cleaned;
static void cleanup(void *a) { (void)a; cleaned++; }
static void *with_cleanup(void *a) { pthread_cleanup_push(cleanup, a); for (;;) pause(); pthread_cleanup_pop(0); return NULL; }
static void *exits(void *a) { pthread_exit(a); }

int main(void) {
    pthread_t t;
    void *r;
    alarm(20);
    pthread_create(&t, NULL, quick, (void *)1);
    pthread_join(t, &r); /* a pooled worker exists */
    for (int k = 0; k < 3; k++) {
        pthread_create(&t, NULL, k == 1 ? with_cleanup : sleeper, NULL);
        usleep(50000);
        int c = pthread_cancel(t);
        int e = pthread_join(t, &r);
        printf("cancel %d: cancel=%d join=%d canceled=%d\n", k, c, e, r == PTHREAD_CANCELED);
    }
    printf("cleanup handler ran %d time(s)\n", cleaned);
    pthread_create(&t, NULL, exits, (void *)7);
    pthread_join(t, &r);
    printf("pthread_exit: %ld\n", (long)r);
    pthread_attr_t d;
    pthread_attr_init(&d);
    pthread_attr_setdetachstate(&d, PTHREAD_CREATE_DETACHED);
    pthread_create(&t, &d, sleeper, NULL);
    usleep(50000);
    printf("detached cancel=%d\n", pthread_cancel(t));
    usleep(50000);
    long sum = 0;
    for (long i = 0; i < 20; i++) {
        pthread_create(&t, NULL, quick, (void *)i);
        pthread_join(t, &r);
        sum += (long)r;
    }
    printf("next 20 create/join: %ld\n", sum);
    return 0;
}
