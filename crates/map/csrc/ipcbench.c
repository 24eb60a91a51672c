// The IPC microbenchmark of seed 001 §III, rebuilt on Linux pipes: P processes in pairs (0,1),
// (2,3), …; in each pair the first sends a SIZE-byte message through a pipe, the second reads it all
// and answers with one byte through a second pipe; ROUNDS exchanges per pair, all pairs at once.
// Prints the wall time of the whole run in ns and the exchanges made ("ns exchanges").
// Usage: multios-ipcbench PROCS SIZE ROUNDS
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

static void full_read(int fd, char *buf, size_t n) {
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, buf + got, n - got);
		if (r <= 0) { perror("read"); _exit(3); }
		got += (size_t)r;
	}
}

static void full_write(int fd, const char *buf, size_t n) {
	size_t put = 0;
	while (put < n) {
		ssize_t r = write(fd, buf + put, n - put);
		if (r <= 0) { perror("write"); _exit(3); }
		put += (size_t)r;
	}
}

int main(int argc, char **argv) {
	if (argc != 4) { fprintf(stderr, "usage: %s PROCS SIZE ROUNDS\n", argv[0]); return 2; }
	int procs = atoi(argv[1]);
	size_t size = (size_t)atol(argv[2]);
	long rounds = atol(argv[3]);
	if (procs < 2 || procs % 2 || size < 1 || rounds < 1) { fprintf(stderr, "PROCS even >= 2, SIZE, ROUNDS >= 1\n"); return 2; }
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int p = 0; p < procs / 2; p++) {
		int there[2], back[2];
		if (pipe(there) || pipe(back)) { perror("pipe"); return 1; }
		for (int side = 0; side < 2; side++) {
			pid_t pid = fork();
			if (pid < 0) { perror("fork"); return 1; }
			if (pid) continue;
			char *buf = malloc(size);
			if (!buf) _exit(4);
			memset(buf, side ? 'b' : 'a', size);
			char ack = 'k';
			for (long r = 0; r < rounds; r++) {
				if (side == 0) {
					full_write(there[1], buf, size);
					full_read(back[0], &ack, 1);
				} else {
					full_read(there[0], buf, size);
					full_write(back[1], &ack, 1);
				}
			}
			_exit(0);
		}
		close(there[0]); close(there[1]); close(back[0]); close(back[1]);
	}
	int status, bad = 0;
	while (wait(&status) > 0)
		if (!WIFEXITED(status) || WEXITSTATUS(status)) bad = 1;
	clock_gettime(CLOCK_MONOTONIC, &b);
	long long ns = (b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec);
	printf("%lld %ld\n", ns, rounds * (procs / 2));
	return bad;
}
