// UDP over loopback: the child binds 127.0.0.1 (a port the kernel picks, sent to the parent through
// a pipe) and receives; the parent sends MSGS datagrams of SIZE bytes, the first half with sendto(2)
// naming the address, the second half with send(2) after connect(2). Each datagram is answered with
// a one-byte datagram before the next is sent (no loss on loopback). Usage: udp_pair MSGS SIZE
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
	int p[2];
	if (pipe(p)) return 1;
	pid_t pid = fork();
	if (pid < 0) return 1;
	if (pid == 0) {
		int s = socket(AF_INET, SOCK_DGRAM, 0);
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		socklen_t alen = sizeof a;
		if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) || getsockname(s, (struct sockaddr *)&a, &alen))
			_exit(2);
		if (write(p[1], &a, sizeof a) != sizeof a) _exit(2);
		char *buf = malloc(size + 1);
		for (int i = 0; i < msgs; i++) {
			struct sockaddr_in from;
			socklen_t flen = sizeof from;
			ssize_t r = recvfrom(s, buf, size + 1, 0, (struct sockaddr *)&from, &flen);
			if (r != (ssize_t)size) _exit(3);
			if (sendto(s, "a", 1, 0, (struct sockaddr *)&from, flen) != 1) _exit(4);
		}
		_exit(0);
	}
	struct sockaddr_in a;
	if (read(p[0], &a, sizeof a) != sizeof a) return 1;
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0) return 1;
	char *buf = malloc(size);
	memset(buf, 'u', size);
	char ack;
	for (int i = 0; i < msgs; i++) {
		if (i == msgs / 2 && connect(s, (struct sockaddr *)&a, sizeof a)) return 5;
		ssize_t w = i < msgs / 2 ? sendto(s, buf, size, 0, (struct sockaddr *)&a, sizeof a) : send(s, buf, size, 0);
		if (w != (ssize_t)size) return 6;
		if (recv(s, &ack, 1, 0) != 1) return 7;
	}
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 8;
}
