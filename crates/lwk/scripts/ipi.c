// What a TLB flush costs a process natively when another of its threads is busy on the other CPU,
// and why that thread should exit to the hypervisor now and then (issues #13, #15;
// `crates/lwk/src/aside.rs`, `crates/host/src/hvexit.rs`). An mprotect that takes write access away
// and a write to a page that read the zero page each make the kernel flush the TLB of every CPU the
// process runs on, by an IPI it waits for. On this VM an IPI for a virtual CPU busy running code is
// delivered only at that CPU's next exit to the hypervisor; `cpuid` always exits.
// Build: gcc -O2 -pthread -o ipi crates/lwk/scripts/ipi.c
// Run:   ./ipi alone        (no second thread)
//        ./ipi spin [E]     (a second thread polls with `pause` on CPU 0, running `cpuid` once every
//                            E µs when E > 0; this thread runs on CPU 1)
//        ./ipi spin syscall (the poller makes a raw getppid per turn: a system call is no exit)
// Prints µs per mprotect pair and per zero-page copy, and the poller's exits per ms.
#define _GNU_SOURCE
#include <cpuid.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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
	int spin = argc > 1 && strcmp(argv[1], "spin") == 0;
	if (argc < 2 || argc > 3 || (!spin && strcmp(argv[1], "alone") != 0) || (!spin && argc == 3)) {
		fprintf(stderr, "usage: %s alone | spin [E|syscall]   (E: µs between the poller's exits; 0: none)\n",
			argv[0]);
		return 2;
	}
	by_syscall = argc == 3 && strcmp(argv[2], "syscall") == 0;
	every_s = argc == 3 && !by_syscall ? atof(argv[2]) * 1e-6 : 0;
	pthread_t t;
	if (spin) pthread_create(&t, NULL, poller, NULL);
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
	if (spin) pthread_join(t, NULL);
	printf("%s %s: mprotect (take write away, give it back) %.1f us a pair; zero page read then written %.1f us a "
	       "page; poller exits %.1f per ms\n",
	       argv[1], argc == 3 ? argv[2] : "", (t1 - t0) / N * 1e6, (t2 - t1) / N * 1e6,
	       (e1 - e0) / (t2 - t0) / 1e3);
	return 0;
}
