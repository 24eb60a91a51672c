// What a first touch of a fresh anonymous page costs, written at once or read first (issue #15: why
// xz runs slower in the LWK). A read of a fresh page maps the host's zero page; the write after it
// copies the page, and the copy flushes the TLB of every CPU where the address space is live — in
// the LWK the VMM's, whose proxy spins on another CPU. The mapping is MAP_NORESERVE so that the
// LWK's populating at map time leaves it alone. Prints µs a page for each phase.
// Build: gcc -O2 -o zeropage crates/lwk/scripts/zeropage.c
// Run:   ./zeropage w|r PAGES          (and: multios lwk run -- ./zeropage r 20000)
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
	if (argc < 3 || (argv[1][0] != 'w' && argv[1][0] != 'r')) {
		fprintf(stderr, "usage: %s w|r PAGES\n", argv[0]);
		return 2;
	}
	long pages = atol(argv[2]);
	if (pages < 1) return 2;
	volatile char *f = mmap(0, (size_t)pages * 4096, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (f == MAP_FAILED) return 1;
	long s = 0;
	double t0 = now();
	if (argv[1][0] == 'r')
		for (long i = 0; i < pages; i++) s += f[i * 4096];
	double t1 = now();
	for (long i = 0; i < pages; i++) f[i * 4096] = 1;
	double t2 = now();
	printf("%s read %.2f us/page write %.2f us/page (sink %ld)\n", argv[1][0] == 'r' ? "read-then-write" : "write-only",
	       (t1 - t0) / pages * 1e6, (t2 - t1) / pages * 1e6, s);
	return 0;
}
