// Why a thread that polls should exit to the hypervisor now and then (issues #13, #15;
// `crates/host/src/hvexit.rs`). On this VM an IPI for a virtual CPU busy running code is delivered
// only at that CPU's next exit to the hypervisor beneath. Here a second thread of the process polls
// on CPU 0 — with `pause` only (E = 0), or running `cpuid` (which always exits) once every E µs —
// while this thread, on CPU 1, makes calls that flush the TLB of every CPU the process runs on: an
// mprotect that takes write access away and gives it back, and a write to a page that read the zero
// page. Prints µs per pair / per page and the poller's exits per ms. `./hvexit syscall` polls
// with a raw getppid per turn instead (a system call is no exit to the hypervisor).
// Build: gcc -O2 -pthread -o hvexit crates/lwk/scripts/hvexit.c
// Run:   for e in 0 5 20 100 syscall; do ./hvexit $e; done
#define _GNU_SOURCE
#include <cpuid.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <time.h>

static volatile int stop;
static volatile long exits;
static double every_s;
static int by_syscall;

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

static void *poller(void *unused) {
	(void)unused;
	pin(0);
	double last = now();
	unsigned a, b, c, d;
	while (!stop) {
		if (by_syscall)
			syscall(SYS_getppid);
		else
			for (int i = 0; i < 64; i++) __builtin_ia32_pause();
		if (every_s > 0 && now() - last >= every_s) {
			__cpuid(0, a, b, c, d);
			exits++;
			last = now();
		}
	}
	return NULL;
}

int main(int argc, char **argv) {
	if (argc != 2) {
		fprintf(stderr, "usage: %s E|syscall   (µs between the poller's exits; 0: none)\n", argv[0]);
		return 2;
	}
	by_syscall = strcmp(argv[1], "syscall") == 0;
	every_s = by_syscall ? 0 : atof(argv[1]) * 1e-6;
	pthread_t t;
	pthread_create(&t, NULL, poller, NULL);
	pin(1);
	enum { N = 200 };
	char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *z = mmap(NULL, N * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || z == MAP_FAILED) return 1;
	memset(p, 1, 1 << 20);
	struct timespec settle = {0, 20000000};
	nanosleep(&settle, NULL);
	long e0 = exits;
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
	long e1 = exits;
	stop = 1;
	pthread_join(t, NULL);
	printf("E %s us: mprotect pair %.1f us; zero page read then written %.1f us a page; poller exits %.1f per ms\n",
	       argv[1], (t1 - t0) / N * 1e6, (t2 - t1) / N * 1e6, (e1 - e0) / (t2 - t0) / 1e3);
	return 0;
}
