// A UNIX socket pair: the parent sends MSGS messages of SIZE bytes with send(2) on a stream
// socketpair, the child receives with recv(2) until EOF. Usage: unix_pair MSGS SIZE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/wait.h>

int main(int argc, char **argv) {
	int msgs = argc > 1 ? atoi(argv[1]) : 100;
	size_t size = argc > 2 ? (size_t)atol(argv[2]) : 1000;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) return 1;
	pid_t pid = fork();
	if (pid < 0) return 1;
	if (pid == 0) {
		close(sv[0]);
		char buf[65536];
		ssize_t r;
		while ((r = recv(sv[1], buf, sizeof buf, 0)) > 0) {}
		_exit(0);
	}
	close(sv[1]);
	char *buf = malloc(size);
	memset(buf, 'u', size);
	for (int i = 0; i < msgs; i++) {
		size_t put = 0;
		while (put < size) {
			ssize_t w = send(sv[0], buf + put, size - put, 0);
			if (w <= 0) return 2;
			put += (size_t)w;
		}
	}
	shutdown(sv[0], SHUT_WR);
	int st;
	waitpid(pid, &st, 0);
	return 0;
}
