/* Issue #16 item 3: /proc/self/maps shows the program's own address space. Prints the text of
 * /proc/self/maps, then whether the other spellings give the same text. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static char a[1 << 16], b[3][1 << 16];

static long slurp(const char *path, char *buf) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    long n = 0, r;
    while (n < (long)sizeof a - 1 && (r = read(fd, buf + n, sizeof a - 1 - n)) > 0) n += r;
    close(fd);
    buf[n] = 0;
    return n;
}

int main(void) {
    /* One anonymous mapping with its own protection, to be seen as such. */
    char *p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mprotect(p + 4096, 4096, PROT_READ);
    /* Every read before any output: printing allocates stdout's buffer, which changes the map. */
    char paths[3][64];
    snprintf(paths[0], 64, "/proc/thread-self/maps");
    snprintf(paths[1], 64, "/proc/%d/maps", (int)getpid());
    snprintf(paths[2], 64, "/proc/%d/task/%d/maps", (int)getpid(), (int)getpid());
    long na = slurp("/proc/self/maps", a), n[3];
    for (int i = 0; i < 3; i++) n[i] = slurp(paths[i], b[i]);
    if (na <= 0) { printf("cannot read /proc/self/maps\n"); return 1; }
    fputs(a, stdout);
    printf("---\n");
    const char *names[3] = {"/proc/thread-self/maps", "/proc/<pid>/maps", "/proc/<pid>/task/<pid>/maps"};
    for (int i = 0; i < 3; i++) printf("%s: %s\n", names[i], n[i] > 0 && strcmp(a, b[i]) == 0 ? "same" : "DIFFERENT");
    printf("anon %p\n", (void *)p);
    return 0;
}
