// Write + fdatasync of 4 KiB, µs each (issue #15; `multios_host::irqs`): the block device's
// completion is an interrupt, which this VM delivers ms late to a CPU that is busy.
// Build: gcc -O2 -o fsync crates/lwk/scripts/fsync.c
// Run:   ./fsync; multios lwk run -- ./fsync; multios lwk run --cpus 1 --proxy-cpu 0 -- ./fsync
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
	enum { N = 30 };
	int fd = open("fsync.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (fd < 0) return 1;
	char b[4096] = {1};
	double t0 = now();
	for (int i = 0; i < N; i++) {
		if (pwrite(fd, b, sizeof b, (off_t)i * 4096) != (ssize_t)sizeof b || fdatasync(fd)) return 1;
	}
	printf("write + fdatasync of 4 KiB: %.0f us\n", (now() - t0) / N * 1e6);
	close(fd);
	unlink("fsync.dat");
	return 0;
}
