// Random reads and writes over MIB MiB of memory touched beforehand, ns per iteration (issue #15):
// whether the LWK's guest pays more than the native program for TLB misses and page walks over a
// large set. The first touches are made before the timed loop.
// Build: gcc -O2 -o randaccess crates/lwk/scripts/randaccess.c
// Run:   ./randaccess MIB ITERS          (and: multios lwk run -- ./randaccess 128 20000000)
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: %s MIB ITERS\n", argv[0]);
		return 2;
	}
	size_t mib = (size_t)atol(argv[1]);
	long iters = atol(argv[2]);
	if (mib < 1 || iters < 1) return 2;
	size_t n = mib << 17; /* 8-byte words */
	uint64_t *a = malloc(n * 8);
	if (!a) return 1;
	for (size_t i = 0; i < n; i++) a[i] = i * 2654435761u;
	uint64_t x = 88172645463325252ull, s = 0;
	double t0 = now();
	for (long i = 0; i < iters; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		s += a[x % n];
		a[(x >> 20) % n] += s;
	}
	double t1 = now();
	printf("%zu MiB %.2f ns/iter (sink %llu)\n", mib, (t1 - t0) / iters * 1e9, (unsigned long long)(s & 1));
	return 0;
}
