/* /proc as a program sees it in the LWK (found with `ps`, which died of "fatal library error"):
 * the procfs root can be listed, and /proc/self/auxv is the program's own auxiliary vector — the
 * one its stack starts with (getauxval), not the VMM's, and not refused. Prints the same lines as
 * natively. */
#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

int main(void) {
    DIR *d = opendir("/proc");
    if (!d) {
        perror("opendir /proc");
        return 1;
    }
    int self = 0, numbered = 0;
    char me[32];
    snprintf(me, sizeof me, "%d", (int)getpid());
    for (struct dirent *e; (e = readdir(d));) {
        numbered += atoi(e->d_name) > 0;
        self |= strcmp(e->d_name, me) == 0;
    }
    closedir(d);
    printf("/proc lists processes: %d, this one among them: %d\n", numbered > 1, self);
    int fd = open("/proc/self/auxv", O_RDONLY);
    if (fd < 0) {
        perror("open /proc/self/auxv");
        return 1;
    }
    Elf64_auxv_t v[64];
    ssize_t n = read(fd, v, sizeof v);
    close(fd);
    int entries = 0, agree = 0, pagesz = 0, ended = 0;
    for (ssize_t i = 0; i < n / (ssize_t)sizeof v[0]; i++) {
        if (v[i].a_type == AT_NULL) {
            ended = 1;
            break;
        }
        if (v[i].a_type == AT_HWCAP || v[i].a_type == AT_HWCAP2)
            continue; /* glibc's getauxval gives its own x86-64 values for these */
        entries++;
        agree += v[i].a_un.a_val == getauxval(v[i].a_type);
        pagesz |= v[i].a_type == AT_PAGESZ && v[i].a_un.a_val == 4096;
    }
    printf("auxv: ends with AT_NULL %d, every entry as getauxval says %d, AT_PAGESZ 4096 %d\n", ended,
           entries > 5 && agree == entries, pagesz);
    return 0;
}
