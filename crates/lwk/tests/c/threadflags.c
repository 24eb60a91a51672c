/* Issue #14: a new thread starts with the flags Linux gives it (the parent's at its clone: no
 * AC, DF or TF), whichever syscall site made the clone (a rewritten one enters the LWK's stub
 * with r11 = the stub's address, not the flags). Each thread reads its flags with pushf and
 * creates the next; the output must be the same natively and in the LWK. */
#include <pthread.h>
#include <stdio.h>

#define AC (1UL << 18)
#define DF (1UL << 10)
#define TF (1UL << 8)

static unsigned long flags(void) {
    unsigned long f;
    __asm__ volatile("pushfq; popq %0" : "=r"(f));
    return f;
}

static int bad;
static pthread_barrier_t all_up;

static void *check(void *arg) {
    (void)arg;
    if (flags() & (AC | DF | TF))
        __atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
    return NULL;
}

/* Waits until all are running (so the threads hold many vCPUs at once: the stub address of a
 * high vCPU id has bit 18, AC, set), then clones a thread that checks its flags. */
static void *parent(void *arg) {
    (void)arg;
    pthread_barrier_wait(&all_up);
    check(NULL);
    pthread_t t;
    if (pthread_create(&t, NULL, check, NULL) == 0)
        pthread_join(t, NULL);
    return NULL;
}

#define N 100

int main(void) {
    pthread_barrier_init(&all_up, NULL, N);
    pthread_t t[N];
    int made = 0;
    for (int k = 0; k < N; k++)
        if (pthread_create(&t[k], NULL, parent, NULL) == 0)
            made++;
    for (int k = 0; k < made; k++)
        pthread_join(t[k], NULL);
    printf("%d threads, each cloned one; threads with AC, DF or TF set: %d\n", made, bad);
    return 0;
}
