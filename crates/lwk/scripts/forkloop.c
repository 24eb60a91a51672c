// fork + _exit + waitpid, 20 times, with 8 MiB of memory touched (issue #15): what a guest's fork
// costs the LWK (the VMM forks; fork(2) write-protects the parent's pages and flushes its TLBs).
// Build: gcc -O2 -o forkloop crates/lwk/scripts/forkloop.c
// Run:   ./forkloop; multios lwk run -- ./forkloop
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
	enum { N = 20, SIZE = 8 << 20 };
	char *b = malloc(SIZE);
	if (!b) return 1;
	memset(b, 1, SIZE);
	double t0 = now();
	for (int i = 0; i < N; i++) {
		pid_t p = fork();
		if (p == 0) _exit(0);
		if (p < 0 || waitpid(p, NULL, 0) != p) return 1;
	}
	printf("fork + exit + wait: %.0f us\n", (now() - t0) / N * 1e6);
	return 0;
}
