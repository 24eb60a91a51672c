/* Issue #16: robust mutexes whose owner dies — a thread that exits holding one, a thread that
 * exits while another waits for it, a forked child holding a process-shared one (exiting, waited
 * on, killed by a signal, or ending with exit while a second thread of it holds it), and
 * get_robust_list of the caller. Every line is compared with the native run. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t rm;
static volatile int locked;

static void init(pthread_mutex_t *m, int shared) {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
  if (shared) pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
  pthread_mutex_init(m, &a);
}

static int timedlock(pthread_mutex_t *m, int secs) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += secs;
  return pthread_mutex_timedlock(m, &ts);
}

static const char *name(int r) {
  return r == 0 ? "0" : r == EOWNERDEAD ? "EOWNERDEAD" : r == ETIMEDOUT ? "ETIMEDOUT" : strerror(r);
}

static void *lock_and_exit(void *a) {
  pthread_mutex_lock(&rm);
  return NULL;
}

static void *lock_wait_exit(void *a) {
  pthread_mutex_lock(&rm);
  locked = 1;
  usleep(200000); /* main is waiting for it by now */
  return NULL;
}

static void *lock_forever(void *a) {
  pthread_mutex_lock((pthread_mutex_t *)a);
  locked = 1;
  for (;;) pause();
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  pthread_t t;

  init(&rm, 0);
  pthread_create(&t, NULL, lock_and_exit, NULL);
  pthread_join(t, NULL);
  int r = timedlock(&rm, 5);
  printf("thread exited holding it: %s\n", name(r));
  printf("consistent: %d\n", pthread_mutex_consistent(&rm));
  pthread_mutex_unlock(&rm);
  printf("locked again: %s\n", name(timedlock(&rm, 5)));
  pthread_mutex_unlock(&rm);

  pthread_create(&t, NULL, lock_wait_exit, NULL);
  while (!locked) usleep(1000);
  r = timedlock(&rm, 5); /* waits: the owner's exit must wake it */
  printf("waiter woken by the owner's exit: %s\n", name(r));
  pthread_mutex_consistent(&rm);
  pthread_mutex_unlock(&rm);
  pthread_join(t, NULL);

  pthread_mutex_t *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  init(m, 1);
  pid_t c = fork();
  if (!c) { pthread_mutex_lock(m); _exit(0); }
  waitpid(c, NULL, 0);
  printf("child exited holding a shared one: %s\n", name(timedlock(m, 5)));
  pthread_mutex_consistent(m);
  pthread_mutex_unlock(m);

  int pfd[2];
  pipe(pfd);
  c = fork();
  if (!c) { pthread_mutex_lock(m); write(pfd[1], "x", 1); usleep(200000); _exit(0); }
  char x;
  read(pfd[0], &x, 1);
  printf("waiter woken by the child's exit: %s\n", name(timedlock(m, 5)));
  pthread_mutex_consistent(m);
  pthread_mutex_unlock(m);
  waitpid(c, NULL, 0);

  c = fork();
  if (!c) { pthread_mutex_lock(m); write(pfd[1], "x", 1); for (;;) pause(); }
  read(pfd[0], &x, 1);
  kill(c, SIGTERM);
  int st;
  waitpid(c, &st, 0);
  printf("child killed by signal %d holding it: %s\n", WIFSIGNALED(st) ? WTERMSIG(st) : 0, name(timedlock(m, 5)));
  pthread_mutex_consistent(m);
  pthread_mutex_unlock(m);

  c = fork();
  if (!c) {
    locked = 0;
    pthread_create(&t, NULL, lock_forever, m);
    while (!locked) usleep(1000);
    exit(3); /* exit_group while the other thread holds it */
  }
  waitpid(c, &st, 0);
  printf("child's exit with a thread holding it (status %d): %s\n", WEXITSTATUS(st), name(timedlock(m, 5)));
  pthread_mutex_consistent(m);
  pthread_mutex_unlock(m);

  struct robust_list_head *head = NULL;
  size_t len = 0;
  long g = syscall(SYS_get_robust_list, 0, &head, &len);
  printf("get_robust_list: %ld len %zu head set %d\n", g, len, head != NULL);
  g = syscall(SYS_get_robust_list, 999999, &head, &len);
  printf("get_robust_list of no thread: %ld %s\n", g, g ? strerror(errno) : "-");
  g = syscall(SYS_set_robust_list, head, 7);
  printf("set_robust_list bad length: %ld %s\n", g, strerror(errno));
  return 0;
}
