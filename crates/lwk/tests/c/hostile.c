/* Passes VMM addresses to delegated calls: each must fail with EFAULT (or EBADF/EACCES), and the
 * VMM must survive to see the program print its verdict. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static int bad = 0;
static void expect(const char *what, long r, int err) {
    int ok = r == -1 && errno == err;
    printf("%s: %s\n", what, ok ? "refused" : "NOT REFUSED");
    if (!ok) bad++;
}

int main(void) {
    /* The LWK's own page tables, its stub page, a typical VMM heap and stack address. */
    unsigned long vmm[] = {0x7e0000000000UL, 0x7e0000200000UL, 0x555555560000UL, 0x7ffd00000000UL};
    for (int i = 0; i < 4; i++) {
        char name[64];
        snprintf(name, sizeof name, "write from %#lx", vmm[i]);
        expect(name, syscall(SYS_write, 1, vmm[i], 64), EFAULT);
        snprintf(name, sizeof name, "read into %#lx", vmm[i]);
        expect(name, syscall(SYS_read, 0, vmm[i], 64), EFAULT);
    }
    /* A buffer that starts in the guest but runs past its end. */
    expect("write straddling the window", syscall(SYS_write, 1, 0x3ff000UL, 0x2000), EFAULT);
    expect("open with a VMM path pointer", syscall(SYS_openat, AT_FDCWD, 0x7e0000000000UL, O_RDONLY), EFAULT);
    expect("open /proc/self/mem", open("/proc/self/mem", O_RDWR), EACCES);
    char link[64];
    snprintf(link, sizeof link, "/tmp/multios-lwk-hostile-%d", (int)getpid());
    unlink(link);
    symlink("../proc/self/mem", link); /* relative: passes the name check, caught after the open */
    expect("open /proc/self/mem through a symlink", open(link, O_RDWR), EACCES);
    unlink(link);
    char task[64];
    snprintf(task, sizeof task, "/proc/%d/task/%d/mem", (int)getpid(), (int)getpid() + 1);
    expect("open another VMM thread's mem", open(task, O_RDWR), EACCES);
    /* process_vm_writev into the VMM itself (its pid, or the tid of another VMM thread). */
    char byte = 0;
    struct iovec local = {&byte, 1}, remote = {(void *)0x555555560000UL, 1};
    expect("process_vm_writev into the VMM", syscall(SYS_process_vm_writev, getpid(), &local, 1, &remote, 1, 0), EPERM);
    /* The VMM's other threads (proxy, signal pump...) have tids just above its pid: none may be
     * written, and at least one must exist and be refused with EPERM. */
    int written = 0, eperm = 0;
    for (int t = getpid() + 1; t <= getpid() + 64; t++) {
        long r = syscall(SYS_process_vm_writev, t, &local, 1, &remote, 1, 0);
        written += r >= 0;
        eperm += r == -1 && errno == EPERM;
    }
    printf("process_vm_writev into VMM threads: %s\n", written == 0 && eperm > 0 ? "refused" : "NOT REFUSED");
    bad += !(written == 0 && eperm > 0);
    /* The VMM's fds start at the guest's hard RLIMIT_NOFILE. */
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    expect("close a VMM fd", close((int)rl.rlim_max), EBADF);
    expect("dup2 onto a VMM fd", dup2(1, (int)rl.rlim_max + 1), EBADF);
    printf("survived, %d not refused\n", bad);
    return bad;
}
