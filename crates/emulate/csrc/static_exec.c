/* Programs the preload library cannot follow: an execve of a statically linked program replaces
 * the image with one that has no dynamic loader, so LD_PRELOAD is never read and the new image's
 * system calls run natively — not counted, not delegated. The run's report must say so (issue
 * #15: a multi-process program's numbers silently missing a part). Before each execve the target
 * is checked here: a 64-bit ELF file without a PT_INTERP program header. Scripts are not followed
 * to their interpreter (a `#!` line naming a static interpreter is not noticed). */
#include "preload.h"
#include <elf.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>

HIDDEN uint64_t multios_static_execs;
HIDDEN char multios_static_exec_path[256];

static int is_static_elf(const char *path) {
    int fd = (int)multios_xsys(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0, 0, 0);
    if (fd < 0)
        return 0;
    int st = 0;
    Elf64_Ehdr e;
    Elf64_Phdr ph[64];
    if (multios_xsys(SYS_pread64, fd, (long)&e, sizeof e, 0, 0, 0) == (long)sizeof e &&
        !memcmp(e.e_ident, ELFMAG, SELFMAG) && e.e_ident[EI_CLASS] == ELFCLASS64 &&
        e.e_phentsize == sizeof(Elf64_Phdr) && e.e_phnum > 0 && e.e_phnum <= 64) {
        long want = (long)(e.e_phnum * sizeof(Elf64_Phdr));
        if (multios_xsys(SYS_pread64, fd, (long)ph, want, (long)e.e_phoff, 0, 0) == want) {
            st = 1;
            for (int i = 0; i < e.e_phnum; i++)
                if (ph[i].p_type == PT_INTERP)
                    st = 0;
        }
    }
    multios_xsys(SYS_close, fd, 0, 0, 0, 0, 0);
    return st;
}

HIDDEN uint64_t multios_bare_execs;
HIDDEN char multios_bare_exec_path[256];
HIDDEN char multios_library_path[512];

/* Whether the environment `envp` of an execve still names this library in LD_PRELOAD (`env -i`, or a
 * program that builds its children's environment, drops it: the new image then runs natively). */
static int keeps_library(char *const *envp) {
    if (!multios_library_path[0])
        return 1; /* unknown: not reported */
    if (!envp)
        return 0;
    for (char *const *e = envp; *e; e++)
        if (!strncmp(*e, "LD_PRELOAD=", 11) && strstr(*e + 11, multios_library_path))
            return 1;
    return 0;
}

HIDDEN void multios_note_exec(long nr, long path, long envp) {
    if (path && (nr == SYS_execve || nr == SYS_execveat) && !keeps_library((char *const *)envp)) {
        if (!multios_bare_execs++) {
            const char *p = (const char *)path;
            size_t n = strnlen(p, sizeof multios_bare_exec_path - 1);
            memcpy(multios_bare_exec_path, p, n);
            multios_bare_exec_path[n] = 0;
        }
        return;
    }
    if (nr != SYS_execve || !path || !is_static_elf((const char *)path))
        return;
    if (!multios_static_execs++) {
        const char *p = (const char *)path;
        size_t n = strnlen(p, sizeof multios_static_exec_path - 1);
        memcpy(multios_static_exec_path, p, n);
        multios_static_exec_path[n] = 0;
    }
}
