// What a TLB flush costs a process natively when another of its threads is busy on the other CPU
// (issues #13, #15; `crates/lwk/src/aside.rs`): an mprotect that takes write access away and a
// write to a page that read the zero page each make the kernel flush the TLB of every CPU the
// process runs on, by an IPI it waits for.
// Build: gcc -O2 -pthread -o ipi crates/lwk/scripts/ipi.c
// Run:   ./ipi alone     (no second thread)
//        ./ipi spin      (a second thread spins with `pause` on CPU 0; this thread runs on CPU 1)
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static volatile int stop;

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static void pin(int cpu) {
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof s, &s);
}

static void *spinner(void *unused) {
	(void)unused;
	pin(0);
	while (!stop) __builtin_ia32_pause();
	return NULL;
}

int main(int argc, char **argv) {
	int spin = argc > 1 && strcmp(argv[1], "spin") == 0;
	if (argc < 2 || (!spin && strcmp(argv[1], "alone") != 0)) {
		fprintf(stderr, "usage: %s alone|spin\n", argv[0]);
		return 2;
	}
	pthread_t t;
	if (spin) pthread_create(&t, NULL, spinner, NULL);
	pin(1);
	enum { N = 200 };
	char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *z = mmap(NULL, N * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || z == MAP_FAILED) return 1;
	memset(p, 1, 1 << 20);
	struct timespec settle = {0, 20000000};
	nanosleep(&settle, NULL);
	double t0 = now();
	for (int i = 0; i < N; i++) {
		mprotect(p, 4096, PROT_READ);
		mprotect(p, 4096, PROT_READ | PROT_WRITE);
	}
	double t1 = now();
	volatile char sink = 0;
	for (int i = 0; i < N; i++) {
		sink += z[i * 4096];
		z[i * 4096] = 1;
	}
	double t2 = now();
	stop = 1;
	if (spin) pthread_join(t, NULL);
	printf("%s: mprotect (take write away, give it back) %.1f us a pair; zero page read then written %.1f us a page\n",
	       argv[1], (t1 - t0) / N * 1e6, (t2 - t1) / N * 1e6);
	return 0;
}
