// A futex pair: two threads hand a token back and forth ROUNDS times with FUTEX_WAIT/FUTEX_WAKE.
// Each side counts the tasks its FUTEX_WAKE calls report woken; prints "main_woke N" and
// "thread_woke N" and the tids ("main_tid T", "thread_tid T") on stderr. Usage: futex_pair ROUNDS
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static _Atomic int turn = 0; /* 0: main's turn, 1: the thread's */
static long rounds;
static long woke[2];
static pid_t tids[2];

static long futex(_Atomic int *addr, int op, int val) {
	return syscall(SYS_futex, (int *)addr, op, val, NULL, NULL, 0);
}

static void play(int me) {
	tids[me] = (pid_t)syscall(SYS_gettid);
	for (long r = 0; r < rounds; r++) {
		while (atomic_load(&turn) != me)
			futex(&turn, FUTEX_WAIT_PRIVATE, 1 - me);
		atomic_store(&turn, 1 - me);
		long n = futex(&turn, FUTEX_WAKE_PRIVATE, 1);
		if (n > 0) woke[me] += n;
	}
}

static void *thread_main(void *arg) {
	(void)arg;
	play(1);
	return NULL;
}

int main(int argc, char **argv) {
	rounds = argc > 1 ? atol(argv[1]) : 1000;
	pthread_t t;
	if (pthread_create(&t, NULL, thread_main, NULL)) return 1;
	play(0);
	pthread_join(t, NULL);
	fprintf(stderr, "main_tid %d\nthread_tid %d\nmain_woke %ld\nthread_woke %ld\n", tids[0], tids[1], woke[0], woke[1]);
	return 0;
}
