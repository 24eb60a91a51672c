// The cost of address-space calls that make the host flush TLBs (issues #13, #15;
// `crates/lwk/src/aside.rs`): mprotect pairs that take write (or execute) access away and give it
// back, and mmap + first touch + munmap of 64 KiB, µs each.
// Build: gcc -O2 -o mapcalls crates/lwk/scripts/mapcalls.c
// Run:   ./mapcalls; multios lwk run -- ./mapcalls; MULTIOS_LWK_ASIDE=off multios lwk run -- ./mapcalls
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
	enum { N = 200 };
	char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) return 1;
	memset(p, 1, 1 << 20);
	double t0 = now();
	for (int i = 0; i < N; i++) {
		mprotect(p, 4096, PROT_READ);
		mprotect(p, 4096, PROT_READ | PROT_WRITE);
	}
	double t1 = now();
	for (int i = 0; i < N; i++) {
		char *q = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (q == MAP_FAILED) return 1;
		q[0] = 1;
		munmap(q, 65536);
	}
	double t2 = now();
	for (int i = 0; i < N; i++) {
		mprotect(p, 4096, PROT_READ | PROT_WRITE | PROT_EXEC);
		mprotect(p, 4096, PROT_READ | PROT_WRITE);
	}
	double t3 = now();
	printf("mprotect write away and back %.1f us a pair; mmap + touch + munmap 64 KiB %.1f us; "
	       "mprotect exec added and taken away %.1f us a pair\n",
	       (t1 - t0) / N * 1e6, (t2 - t1) / N * 1e6, (t3 - t2) / N * 1e6);
	return 0;
}
