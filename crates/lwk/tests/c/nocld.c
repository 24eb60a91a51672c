/* Issue #16: SIGCHLD's SA_NOCLDSTOP (no SIGCHLD when a child stops or continues), SA_NOCLDWAIT
 * (children are not left as zombies: wait gives ECHILD, a handler still runs) and SIG_IGN (the
 * same), and the default again after they are reset. Compared with the native run. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int calls, code;
static void h(int s, siginfo_t *si, void *u) { calls++; code = si->si_code; }

static void set(void (*fn)(int, siginfo_t *, void *), void (*plain)(int), int flags) {
  struct sigaction sa = {0};
  if (fn) sa.sa_sigaction = fn; else sa.sa_handler = plain;
  sa.sa_flags = flags | (fn ? SA_SIGINFO : 0);
  sigaction(SIGCHLD, &sa, 0);
}

static void reap_check(const char *what) {
  pid_t c = fork();
  if (!c) _exit(1);
  usleep(200000);
  int st;
  pid_t r = wait(&st);
  printf("%s: wait()=%s errno=%s calls=%d\n", what, r == c ? "child pid" : r == -1 ? "-1" : "other",
         r == -1 ? strerror(errno) : "-", calls);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  set(h, 0, SA_RESTART | SA_NOCLDSTOP);
  int st;
  pid_t c = fork();
  if (!c) { raise(SIGSTOP); _exit(7); }
  waitpid(c, &st, WUNTRACED);
  usleep(100000);
  printf("SA_NOCLDSTOP: stopped=%d calls=%d\n", WIFSTOPPED(st), calls);
  kill(c, SIGCONT);
  waitpid(c, &st, 0);
  usleep(100000);
  printf("after exit: status=%d calls=%d si_code=%d\n", WEXITSTATUS(st), calls, code);

  set(h, 0, SA_RESTART);
  calls = 0;
  c = fork();
  if (!c) { raise(SIGSTOP); _exit(7); }
  waitpid(c, &st, WUNTRACED);
  usleep(100000);
  printf("without it: calls after the stop=%d si_code=%d\n", calls, code);
  kill(c, SIGCONT);
  waitpid(c, &st, 0);

  calls = 0;
  set(0, SIG_DFL, SA_NOCLDWAIT);
  reap_check("SA_NOCLDWAIT");
  calls = 0;
  set(h, 0, SA_NOCLDWAIT);
  reap_check("SA_NOCLDWAIT with a handler");
  calls = 0;
  set(0, SIG_IGN, 0);
  reap_check("SIG_IGN");
  calls = 0;
  set(0, SIG_DFL, 0);
  reap_check("SIG_DFL again");
  return 0;
}
