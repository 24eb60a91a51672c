/* multios LWK overrides: system calls made in the pattern the LWK's loader rewrites
 * (`mov $nr,%eax; syscall`, crates/lwk/src/rewrite.rs), so that in the LWK they jump to the
 * stub instead of paying the `syscall` trap; natively they are plain system calls. */
#ifndef MULTIOS_LWK_SYSCALL_H
#define MULTIOS_LWK_SYSCALL_H

#define LWK_SYSCALL(name, nr)                                                                      \
    static inline long name(long a, long b, long c, long d, long e, long f) {                     \
        long r;                                                                                    \
        register long r10 __asm__("r10") = d;                                                      \
        register long r8 __asm__("r8") = e;                                                        \
        register long r9 __asm__("r9") = f;                                                        \
        __asm__ volatile("movl $" #nr ", %%eax\n\tsyscall"                                         \
                         : "=a"(r)                                                                 \
                         : "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)                      \
                         : "rcx", "r11", "memory");                                                \
        return r;                                                                                  \
    }

#endif
