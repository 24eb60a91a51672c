// A TCP connection over loopback: the parent listens on 127.0.0.1 (a port the kernel picks), the
// child connects and write(2)s MSGS messages of SIZE bytes, the parent read(2)s until EOF and answers
// with one byte per message received in full at the end. Usage: tcp_pair MSGS SIZE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
	int msgs = argc > 1 ? atoi(argv[1]) : 100;
	size_t size = argc > 2 ? (size_t)atol(argv[2]) : 1000;
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof a;
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &alen))
		return 1;
	pid_t pid = fork();
	if (pid < 0) return 1;
	if (pid == 0) {
		close(l);
		int c = socket(AF_INET, SOCK_STREAM, 0);
		if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a)) _exit(2);
		char *buf = malloc(size);
		memset(buf, 't', size);
		for (int i = 0; i < msgs; i++) {
			size_t put = 0;
			while (put < size) {
				ssize_t w = write(c, buf + put, size - put);
				if (w <= 0) _exit(3);
				put += (size_t)w;
			}
		}
		shutdown(c, SHUT_WR);
		char ack[4096];
		while (read(c, ack, sizeof ack) > 0) {}
		_exit(0);
	}
	int s = accept(l, 0, 0);
	if (s < 0) return 4;
	char buf[65536];
	ssize_t r;
	size_t got = 0;
	while ((r = read(s, buf, sizeof buf)) > 0) got += (size_t)r;
	size_t answers = got / size;
	for (size_t i = 0; i < answers; i++)
		if (write(s, "a", 1) != 1) return 5;
	close(s);
	int st;
	waitpid(pid, &st, 0);
	printf("received %zu\n", got);
	return got == (size_t)msgs * size && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 6;
}
