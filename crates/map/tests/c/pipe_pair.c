// A pipe pair: the parent writes MSGS messages of SIZE bytes into a pipe, the child reads until EOF.
// Prints "sent BYTES" (parent) and "read BYTES" (child) on stderr. Usage: pipe_pair MSGS SIZE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

int main(int argc, char **argv) {
	int msgs = argc > 1 ? atoi(argv[1]) : 100;
	size_t size = argc > 2 ? (size_t)atol(argv[2]) : 1000;
	int fd[2];
	if (pipe(fd)) return 1;
	pid_t pid = fork();
	if (pid < 0) return 1;
	if (pid == 0) {
		close(fd[1]);
		char buf[65536];
		long total = 0;
		ssize_t r;
		while ((r = read(fd[0], buf, sizeof buf)) > 0) total += r;
		fprintf(stderr, "read %ld\n", total);
		_exit(0);
	}
	close(fd[0]);
	char *buf = malloc(size);
	memset(buf, 'x', size);
	long sent = 0;
	for (int i = 0; i < msgs; i++) {
		size_t put = 0;
		while (put < size) {
			ssize_t w = write(fd[1], buf + put, size - put);
			if (w <= 0) return 2;
			put += (size_t)w;
			sent += w;
		}
	}
	close(fd[1]);
	int st;
	waitpid(pid, &st, 0);
	fprintf(stderr, "sent %ld\n", sent);
	return 0;
}
