/* Issue #16 item 2: a second procfs mount (argv[1]) must not be a way to the VMM's memory or fds.
 * Every open of a VMM's mem (own, a thread's, the parent VMM's from a forked child), its
 * map_files, its fds >= the guest's hard RLIMIT_NOFILE (the VMM's range), through the second
 * mount, a symlink or a directory fd, must fail with EACCES; harmless entries must work. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

static int bad = 0;
static const char *m;

static void refused(const char *what, int fd) {
    int ok = fd < 0 && errno == EACCES;
    printf("%s: %s\n", what, ok ? "refused" : "NOT REFUSED");
    if (fd >= 0) close(fd); /* never written to */
    bad += !ok;
}

static void works(const char *what, int ok) {
    printf("%s: %s\n", what, ok ? "ok" : "FAILED");
    bad += !ok;
}

static int at(const char *fmt, int flags, long x) {
    char path[512], rel[256];
    snprintf(rel, sizeof rel, fmt, x);
    snprintf(path, sizeof path, "%s/%s", m, rel);
    return open(path, flags);
}

/* The standard streams the program was started with: the VMM keeps its own copies of them above
 * the floor (its messages go to its copy of stderr); reopening such a copy gives the program the
 * file it was handed at start, not a VMM resource. */
static struct stat start_streams[3];
static int is_start_stream(const struct stat *st) {
    for (int i = 0; i < 3; i++)
        if (start_streams[i].st_ino && st->st_dev == start_streams[i].st_dev && st->st_ino == start_streams[i].st_ino)
            return 1;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    for (int i = 0; i < 3; i++)
        if (fstat(i, &start_streams[i]) != 0)
            start_streams[i].st_ino = 0;
    m = argv[1];
    refused("<mnt>/self/mem", at("self/mem", O_RDWR, 0));
    refused("<mnt>/<pid>/mem", at("%ld/mem", O_RDWR, getpid()));
    refused("<mnt>/thread-self/mem", at("thread-self/mem", O_RDWR, 0));
    refused("<mnt>/self/map_files", at("self/map_files", O_RDONLY | O_DIRECTORY, 0));
    refused("<mnt>/self/pagemap", at("self/pagemap", O_RDONLY, 0));
    /* Every VMM thread. */
    char dir[512];
    snprintf(dir, sizeof dir, "%s/self/task", m);
    DIR *d = opendir(dir);
    int threads = 0, opened = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        threads++;
        char rel[300];
        snprintf(rel, sizeof rel, "self/task/%s/mem", e->d_name);
        int fd = at(rel, O_RDWR, 0);
        if (fd >= 0) { opened++; close(fd); }
    }
    if (d) closedir(d);
    printf("mem of every task: %s\n", threads > 0 && opened == 0 ? "refused" : "NOT REFUSED");
    bad += !(threads > 0 && opened == 0);
    /* The VMM's fds: at and above the guest's hard limit. */
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    /* The VMM's procfs directory reopened this way is a procfs directory like open("/proc") gives
     * (harmless: what is opened below it is judged in turn, and its mem must stay refused); every
     * other VMM fd must be refused. */
    int vmm_opened = 0, vmm_eacces = 0, proc_dirs = 0, proc_dirs_safe = 0;
    for (long fd = rl.rlim_max; fd < (long)rl.rlim_max + 16; fd++) {
        int r = at("self/fd/%ld", O_RDONLY, fd);
        vmm_eacces += r < 0 && errno == EACCES;
        if (r < 0)
            continue;
        struct statfs sf;
        struct stat st;
        if (fstatfs(r, &sf) == 0 && sf.f_type == 0x9fa0 && fstat(r, &st) == 0 && S_ISDIR(st.st_mode)) {
            proc_dirs++;
            int x = openat(r, "self/mem", O_RDWR);
            proc_dirs_safe += x < 0 && errno == EACCES;
            if (x >= 0) close(x);
        } else if (!(fstat(r, &st) == 0 && is_start_stream(&st))) {
            vmm_opened++;
        }
        close(r);
    }
    printf("<mnt>/self/fd/<VMM fds>: %s\n", vmm_opened == 0 && vmm_eacces > 0 ? "refused" : "NOT REFUSED");
    bad += !(vmm_opened == 0 && vmm_eacces > 0);
    works("the VMM's procfs directory through its fd link: a procfs directory, its self/mem refused",
          proc_dirs == proc_dirs_safe);
    /* A directory fd on the second mount, and a symlink to it. */
    snprintf(dir, sizeof dir, "%s/self", m);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    refused("openat(<mnt>/self fd, \"mem\")", openat(dfd, "mem", O_RDWR));
    char link[64];
    snprintf(link, sizeof link, "/tmp/multios-lwk-procmount-%d", (int)getpid());
    unlink(link);
    snprintf(dir, sizeof dir, "%s/self/mem", m);
    symlink(dir, link);
    refused("symlink to <mnt>/self/mem", open(link, O_RDWR));
    unlink(link);
    /* The parent VMM from a forked child. */
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        bad = 0;
        refused("child: <mnt>/<ppid>/mem", at("%ld/mem", O_RDWR, getppid()));
        refused("child: <mnt>/<ppid>/maps", at("%ld/maps", O_RDONLY, getppid()));
        fflush(stdout);
        _exit(bad);
    }
    int st = 0;
    waitpid(c, &st, 0);
    bad += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    /* Harmless entries still work. */
    int s = openat(dfd, "status", O_RDONLY);
    char buf[64];
    works("<mnt>/self/status", s >= 0 && read(s, buf, sizeof buf) > 0);
    if (s >= 0) close(s);
    snprintf(dir, sizeof dir, "%s/self/fd", m);
    d = opendir(dir);
    int high = 0, n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        n++;
        long fd = 0;
        sscanf(e->d_name, "%ld", &fd);
        high += fd >= (long)rl.rlim_max;
    }
    if (d) closedir(d);
    works("<mnt>/self/fd lists only the guest's fds", n >= 3 && high == 0);
    close(dfd);
    printf("survived, %d not refused\n", bad);
    return bad;
}
