/* Issue #16: fork after the guest dropped root (`uid`) or chrooted (`chroot DIR`): the forked
 * VMM made its VM by opening /dev/kvm by path again, under the new credentials or root, and the
 * child exited 127. Build static (the chroot holds nothing but this program). */
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int child_status(void) {
    fflush(stdout);
    pid_t p = fork();
    if (p < 0) { perror("fork"); return -1; }
    if (p == 0) { printf("child uid %d\n", (int)getuid()); fflush(stdout); _exit(7); }
    int st;
    waitpid(p, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "uid") == 0) {
        if (setgroups(0, NULL) || setgid(65534) || setuid(65534)) { perror("drop"); return 1; }
    } else if (argc > 2 && strcmp(argv[1], "chroot") == 0) {
        if (chroot(argv[2]) || chdir("/")) { perror("chroot"); return 1; }
    } else {
        fprintf(stderr, "usage: i16p_dropfork uid | chroot DIR\n");
        return 2;
    }
    printf("fork: child exit %d\n", child_status());
    /* vfork + exec of this program (in the chroot: its own copy at /prog), as posix_spawn does. */
    if (argc > 2) {
        fflush(stdout);
        pid_t p = vfork();
        if (p == 0) { execl("/prog", "prog", "again", (char *)0); _exit(126); }
        int st;
        waitpid(p, &st, 0);
        printf("vfork+exec: exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st));
    }
    return 0;
}
