/* Issue #16: kill(0, sig) and kill(-pgid, sig) signal the caller's process group: a forked
 * child's kill(0) reaches its parent, the parent's reaches itself before kill returns (SI_USER,
 * its own pid) and its child, SIGUSR2 to the group reaches the caller, and a probe succeeds.
 * Run in a process group of its own. Compared with the native run. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int got, got2, code, from_self;
static void h(int s, siginfo_t *si, void *u) {
  got++;
  code = si->si_code;
  from_self = si->si_pid == getpid();
}
static void h2(int s) { got2++; }

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  struct sigaction sa = {0};
  sa.sa_sigaction = h;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGUSR1, &sa, 0);
  signal(SIGUSR2, h2);
  pid_t c = fork();
  if (!c) {
    int r = kill(0, SIGUSR1);
    printf("child: kill(0) r=%d got=%d\n", r, got);
    _exit(0);
  }
  waitpid(c, 0, 0);
  for (int i = 0; i < 100 && got < 1; i++) usleep(10000);
  printf("parent got the child's: %d\n", got);

  int pfd[2];
  pipe(pfd);
  c = fork();
  if (!c) {
    got = 0;
    write(pfd[1], "x", 1);
    for (int i = 0; i < 300 && !got; i++) usleep(10000);
    _exit(got ? 10 : 11);
  }
  char x;
  read(pfd[0], &x, 1);
  got = 0;
  int r = kill(0, SIGUSR1);
  printf("parent: kill(0) r=%d got before return=%d si_code=%d from self=%d\n", r, got, code, from_self);
  int st;
  waitpid(c, &st, 0);
  printf("the other member got it: %s\n", WEXITSTATUS(st) == 10 ? "yes" : "no");

  got = 0;
  r = kill(-getpgrp(), SIGUSR1);
  printf("kill(-pgrp) r=%d got=%d\n", r, got);
  r = kill(0, SIGUSR2);
  printf("kill(0, SIGUSR2) r=%d got=%d\n", r, got2);
  printf("killpg probe r=%d\n", killpg(getpgrp(), 0));
  r = kill(-999999, SIGUSR1);
  printf("no such group: r=%d %s\n", r, r ? strerror(errno) : "-");
  return 0;
}
