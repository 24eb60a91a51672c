// The IPC microbenchmark of seed 001 §III, rebuilt on Linux pipes: P processes in pairs (0,1),
// (2,3), …; in each pair the first sends a SIZE-byte message through a pipe, the second reads it all
// and answers with one byte through a second pipe; ROUNDS exchanges per pair, all pairs at once.
// Prints the wall time of the exchanges in ns (from the moment every process is made and released
// at once to the last one's end: not the forks), the exchanges made and the CPU time the pairs used
// (user + system, ns, their start-up included), then where the pairs ran: the exchanges whose two
// ends were on one CPU at the hand-off (the receiver answers with its CPU number; the sender
// compares it with its own when the answer arrives), the exchanges after which the sender found
// itself on another CPU than after the previous one (the pair moved), the exchanges the busiest CPU
// carried (senders counted on the CPU they were on) and the CPUs this process may use:
// "ns exchanges cpu_ns together moved busiest cpus". A placement that keeps each pair on one CPU
// and spreads the pairs evenly has together = exchanges, moved = 0 and busiest = the share of the
// CPU with the most pairs.
// Usage: multios-ipcbench PROCS SIZE ROUNDS [CPUS [busy|pages=N|compute]]
// CPUS (for calibration): a comma-separated CPU per process, in the order the pairs' processes are
// made (pair 0's sender, its receiver, pair 1's sender, …); each pins itself there before it starts.
// busy: a SCHED_IDLE spinner is kept on each of those CPUs for the run, so that no CPU ever goes
// idle (a woken process preempts a SCHED_IDLE one at once); its CPU time is not counted.
// pages=N: each pair shares N pages (MAP_SHARED); on receiving, each side writes one word in every
// cache line of them before it answers (the cost of data that moves between caches).
// compute: no messages; every process computes ROUNDS units of SIZE dependent multiply-adds (the
// wall time of work alone on a CPU, or of work on every CPU at once).
#define _GNU_SOURCE
#include <sched.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <signal.h>
#include <sys/mman.h>
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
	if (argc < 4 || argc > 6) { fprintf(stderr, "usage: %s PROCS SIZE ROUNDS [CPUS [busy|pages=N|compute]]\n", argv[0]); return 2; }
	int busy = argc == 6 && strcmp(argv[5], "busy") == 0;
	int compute = argc == 6 && strcmp(argv[5], "compute") == 0;
	long pages = argc == 6 && strncmp(argv[5], "pages=", 6) == 0 ? atol(argv[5] + 6) : 0;
	if (argc == 6 && !busy && !compute && pages <= 0) { fprintf(stderr, "the fifth argument is 'busy', 'pages=N' (N >= 1) or 'compute'\n"); return 2; }
	int procs = atoi(argv[1]);
	size_t size = (size_t)atol(argv[2]);
	long rounds = atol(argv[3]);
	if (procs < 2 || procs % 2 || size < 1 || rounds < 1) { fprintf(stderr, "PROCS even >= 2, SIZE, ROUNDS >= 1\n"); return 2; }
	int cpu_of[4096];
	int ncpus = 0;
	if (argc >= 5) {
		char *s = argv[4];
		while (*s && ncpus < 4096) {
			cpu_of[ncpus++] = (int)strtol(s, &s, 10);
			if (*s == ',') s++;
			else if (*s) { fprintf(stderr, "CPUS: a comma-separated list of CPU numbers\n"); return 2; }
		}
		if (ncpus != procs) { fprintf(stderr, "CPUS: one CPU per process (%d), got %d\n", procs, ncpus); return 2; }
	}
	pid_t spinners[64];
	int nspin = 0;
	if (busy) {
		for (int i = 0; i < ncpus; i++) {
			int dup = 0;
			for (int j = 0; j < i; j++) dup |= cpu_of[j] == cpu_of[i];
			if (dup || nspin == 64) continue;
			pid_t pid = fork();
			if (pid < 0) { perror("fork"); return 1; }
			if (pid == 0) {
				cpu_set_t set;
				CPU_ZERO(&set);
				CPU_SET(cpu_of[i], &set);
				struct sched_param sp = {0};
				if (sched_setaffinity(0, sizeof set, &set) || sched_setscheduler(0, SCHED_IDLE, &sp)) _exit(5);
				for (;;) __asm__ volatile("" ::: "memory");
			}
			spinners[nspin++] = pid;
		}
	}
	struct timespec a, b;
	int go[2];
	if (pipe(go)) { perror("pipe"); return 1; }
	/* per pair: exchanges whose two ends were on one CPU, exchanges after which the sender had
	   moved, and the sender's exchanges per CPU (CPUs 0-255), written by the sender at its end */
	enum { MAXCPU = 256 };
	size_t stride = 2 + MAXCPU;
	long *where = mmap(0, sizeof(long) * stride * (size_t)(procs / 2), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (where == MAP_FAILED) { perror("mmap"); return 1; }
	for (int p = 0; p < procs / 2; p++) {
		int there[2], back[2];
		if (pipe(there) || pipe(back)) { perror("pipe"); return 1; }
		volatile long *shared = 0;
		if (pages) {
			void *m = mmap(0, (size_t)pages * 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
			if (m == MAP_FAILED) { perror("mmap"); return 1; }
			shared = m;
		}
		for (int side = 0; side < 2; side++) {
			pid_t pid = fork();
			if (pid < 0) { perror("fork"); return 1; }
			if (pid) continue;
			if (ncpus) {
				cpu_set_t set;
				CPU_ZERO(&set);
				CPU_SET(cpu_of[2 * p + side], &set);
				if (sched_setaffinity(0, sizeof set, &set)) { perror("sched_setaffinity"); _exit(5); }
			}
			char *buf = malloc(size);
			if (!buf) _exit(4);
			memset(buf, side ? 'b' : 'a', size);
			close(go[1]);
			char g;
			if (read(go[0], &g, 1) != 0) _exit(6); /* released when the parent closes the pipe */
			close(go[0]);
			if (compute) {
				volatile unsigned long sink;
				unsigned long x = (unsigned long)p + 1;
				for (long r = 0; r < rounds; r++)
					for (size_t k = 0; k < size; k++) x = x * 6364136223846793005UL + 1442695040888963407UL;
				sink = x;
				(void)sink;
				_exit(0);
			}
			char ack = 'k';
			long *mine = where + stride * (size_t)p;
			int last = -1;
			for (long r = 0; r < rounds; r++) {
				if (side == 0) {
					full_write(there[1], buf, size);
					full_read(back[0], &ack, 1);
					int cpu = sched_getcpu();
					mine[0] += (unsigned char)ack == (unsigned char)cpu;
					mine[1] += last >= 0 && cpu != last;
					if (cpu >= 0 && cpu < MAXCPU) mine[2 + cpu]++;
					last = cpu;
				} else {
					full_read(there[0], buf, size);
				}
				for (long w = 0; w < pages * 4096 / (long)sizeof(long); w += 64 / sizeof(long))
					shared[w] += r;
				if (side == 1) {
					ack = (char)sched_getcpu();
					full_write(back[1], &ack, 1);
				}
			}
			_exit(0);
		}
		close(there[0]); close(there[1]); close(back[0]); close(back[1]);
	}
	close(go[0]);
	clock_gettime(CLOCK_MONOTONIC, &a);
	close(go[1]);
	int status, bad = 0;
	long long cpu = 0;
	for (int left = procs; left > 0; left--) {
		struct rusage ru;
		pid_t pid = wait4(-1, &status, 0, &ru);
		if (pid < 0) { perror("wait4"); return 1; }
		int spinner = 0;
		for (int i = 0; i < nspin; i++) spinner |= spinners[i] == pid;
		if (spinner) { bad = 1; left++; continue; }
		if (!WIFEXITED(status) || WEXITSTATUS(status)) bad = 1;
		cpu += (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
		       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	for (int i = 0; i < nspin; i++) {
		kill(spinners[i], SIGKILL);
		waitpid(spinners[i], &status, 0);
	}
	long long ns = (b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec);
	long same = 0, moved = 0, busiest = 0;
	for (int p = 0; p < procs / 2; p++) {
		same += where[stride * (size_t)p];
		moved += where[stride * (size_t)p + 1];
	}
	for (int c = 0; c < MAXCPU; c++) {
		long on = 0;
		for (int p = 0; p < procs / 2; p++) on += where[stride * (size_t)p + 2 + (size_t)c];
		if (on > busiest) busiest = on;
	}
	cpu_set_t mask;
	int ncpu = sched_getaffinity(0, sizeof mask, &mask) == 0 ? CPU_COUNT(&mask) : 1;
	printf("%lld %ld %lld %ld %ld %ld %d\n", ns, rounds * (procs / 2), cpu, same, moved, busiest, ncpu);
	return bad;
}
