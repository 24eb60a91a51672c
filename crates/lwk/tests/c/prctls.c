/* Issue #16: prctl — the thread name (set, read back, inherited by a new thread and a forked
 * child, set per thread) and the options served for the calling thread or the process.
 * Compared with the native run. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define T(x) do { errno = 0; long r = (x); printf("%-40s r=%ld errno=%s\n", #x, r, r < 0 ? strerror(errno) : "-"); } while (0)

static void *thread(void *a) {
  char n[16] = {0};
  prctl(PR_GET_NAME, n);
  printf("new thread's name: [%s]\n", n);
  pthread_setname_np(pthread_self(), "worker");
  pthread_getname_np(pthread_self(), n, sizeof n);
  printf("thread renamed: [%s]\n", n);
  int v = -1;
  prctl(PR_GET_PDEATHSIG, &v);
  printf("thread's pdeathsig: %d\n", v);
  return NULL;
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  char nm[16] = {0};
  prctl(PR_GET_NAME, nm);
  printf("initial name: [%s]\n", nm);
  T(prctl(PR_SET_NAME, "a-rather-long-name-here"));
  memset(nm, 0, sizeof nm);
  T(prctl(PR_GET_NAME, nm));
  printf("name=[%s]\n", nm);
  T(prctl(PR_SET_PDEATHSIG, SIGTERM));
  pthread_t t;
  pthread_create(&t, NULL, thread, NULL);
  pthread_join(t, NULL);
  memset(nm, 0, sizeof nm);
  prctl(PR_GET_NAME, nm);
  printf("main's name after: [%s]\n", nm);
  pid_t c = fork();
  if (!c) {
    prctl(PR_GET_NAME, nm);
    int v = -1;
    prctl(PR_GET_PDEATHSIG, &v);
    printf("child's name: [%s] pdeathsig %d\n", nm, v);
    _exit(0);
  }
  waitpid(c, 0, 0);
  int v = -5;
  T(prctl(PR_SET_CHILD_SUBREAPER, 1));
  T(prctl(PR_GET_CHILD_SUBREAPER, &v));
  printf("v=%d\n", v);
  T(prctl(PR_GET_DUMPABLE));
  T(prctl(PR_SET_DUMPABLE, 0));
  T(prctl(PR_GET_DUMPABLE));
  T(prctl(PR_SET_DUMPABLE, 2));
  T(prctl(PR_SET_DUMPABLE, 1));
  T(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
  T(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
  v = -5;
  T(prctl(PR_GET_PDEATHSIG, &v));
  printf("v=%d\n", v);
  T(prctl(PR_SET_PDEATHSIG, 99));
  T(prctl(PR_SET_PDEATHSIG, 0));
  T(prctl(PR_GET_TIMERSLACK));
  T(prctl(PR_SET_TIMERSLACK, 1000));
  T(prctl(PR_GET_TIMERSLACK));
  T(prctl(PR_SET_KEEPCAPS, 1));
  T(prctl(PR_GET_KEEPCAPS));
  T(prctl(PR_CAPBSET_READ, 0));
  T(prctl(PR_GET_SECCOMP));
  T(prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0));
  T(prctl(PR_GET_NAME, (char *)8));
  T(prctl(9999));
  return 0;
}
