/* Issue #15: a program the guest execs that runs on Linux (`--linux-exec`, LWK_LINUX_EXEC) gets
 * what a Linux process gets across fork + execve. `linuxexec` ignores SIGUSR1, blocks SIGUSR2,
 * installs a SIGTERM handler, opens one inheritable fd and one close-on-exec fd, moves to /tmp,
 * forks, and the child execs this program again as `linuxexec child PPID`, which prints what it
 * inherited: its name and thread count (/proc/self/status: a plain process has one thread, a
 * VMM several), the blocked, ignored and caught signals, its open fds, its parent, cwd and
 * the CPUs it may run on; it exits 7 and the parent prints the status. Natively and in the LWK
 * with the child on Linux the output is the same. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_term(int sig) { (void)sig; }

static void status_lines(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    if (!f) {
        perror("/proc/self/status");
        exit(1);
    }
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "Name:", 5) || !strncmp(line, "Threads:", 8) || !strncmp(line, "SigBlk:", 7) ||
            !strncmp(line, "SigIgn:", 7) || !strncmp(line, "SigCgt:", 7))
            fputs(line, stdout);
    }
    fclose(f);
}

static void fds(void) {
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int seen[64] = {0};
    if (!d) {
        perror("/proc/self/fd");
        exit(1);
    }
    while ((e = readdir(d))) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] != '.' && fd != dirfd(d) && fd < 64)
            seen[fd] = 1;
    }
    closedir(d);
    printf("fds:");
    for (int fd = 0; fd < 64; fd++)
        if (seen[fd])
            printf(" %d", fd);
    printf("\n");
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "child")) {
        char cwd[256];
        cpu_set_t cpus;
        status_lines();
        fds();
        printf("parent is the forker: %s\n", getppid() == atoi(argv[2]) ? "yes" : "no");
        printf("cwd: %s\n", getcwd(cwd, sizeof cwd) ? cwd : "?");
        CPU_ZERO(&cpus);
        sched_getaffinity(0, sizeof cpus, &cpus);
        printf("cpus: %d\n", CPU_COUNT(&cpus));
        fflush(stdout);
        return 7;
    }
    signal(SIGUSR1, SIG_IGN);
    signal(SIGTERM, on_term);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR2);
    sigprocmask(SIG_BLOCK, &s, NULL);
    int keep = open("/dev/null", O_RDONLY);
    int gone = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (keep < 0 || gone < 0 || chdir("/tmp") != 0) {
        perror("setup");
        return 1;
    }
    char self[4096], ppid[32];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n < 0) {
        perror("readlink");
        return 1;
    }
    self[n] = 0;
    snprintf(ppid, sizeof ppid, "%d", getpid());
    printf("fds before exec: keep %d, close-on-exec %d\n", keep, gone);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        char *args[] = {"linuxexec", "child", ppid, NULL};
        execv(self, args);
        perror("execv");
        _exit(126);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid) {
        perror("waitpid");
        return 1;
    }
    printf("child exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st));
    return 0;
}
