/* multios preload library: the `migrate` mechanism of `multios emulate` (docs/EMULATOR.md).
 *
 * Loaded with LD_PRELOAD into a dynamically linked program. Its constructor reads the file named by
 * MULTIOS_EMU_CONFIG, installs a SIGSYS handler and turns on Syscall User Dispatch (SUD) for the
 * thread, so every system call made outside this library raises SIGSYS. The handler:
 *  - delegated call: migrates the thread to the control CPUs (sched_setaffinity), spins f_c,
 *    re-issues the call there, spins f_c, migrates back to the compute CPUs;
 *  - local call: re-issues it in place;
 *  - rt_sigreturn: resumes at this library's own `syscall` (inside the SUD-exempt range) so the
 *    program's signal frame is restored untouched;
 *  - rt_sigprocmask: applied to the mask that sigreturn restores (SIGSYS is kept unblocked);
 *  - calls that act on the signal mask, the stack or the thread (sigsuspend,
 *    sigaltstack, clone, fork, vfork, execve): resumes the program at a local stub (below) that
 *    makes the call in the program's own context and jumps back; execve first writes the stats.
 * New threads get SUD through a pthread_create wrapper, forked children through pthread_atfork.
 * Counts and delivered costs are written to MULTIOS stats files at exit_group and before execve.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#include <x86intrin.h>

#ifndef PR_SET_SYSCALL_USER_DISPATCH
#define PR_SET_SYSCALL_USER_DISPATCH 59
#define PR_SYS_DISPATCH_OFF 0
#define PR_SYS_DISPATCH_ON 1
#endif
#define SEL_ALLOW 0
#define SEL_BLOCK 1
#define NR_MAX 512
#define MAX_SAMPLES (1u << 20)

enum kind { K_CONST = 0, K_EXP = 1, K_SAMPLES = 2 };
struct cost {
    int kind;
    double param; /* ticks (const) or mean ticks (exp) */
    uint64_t *samples;
    uint64_t nsamples;
};

static int active;
static unsigned char delegated[NR_MAX];
static unsigned char rewind_local[NR_MAX];
static struct cost costs[NR_MAX];
static cpu_set_t compute_set, control_set;
static char stats_dir[512];
static volatile uint64_t del_cnt[NR_MAX], loc_cnt[NR_MAX];
static uint64_t samples[MAX_SAMPLES];
static volatile uint64_t nsamp;
static uint64_t dump_seq;
static __thread char selector __attribute__((tls_model("initial-exec")));
static __thread uint64_t rng_state __attribute__((tls_model("initial-exec")));

/* The SUD-exempt range: the restorer of our handler, a bare `syscall` for rt_sigreturn, and 64
 * "local stubs" `syscall; jmp *slot`: a call that must run in the program's own context (on its own
 * stack, with its own signal mask) is redirected to a stub whose slot holds the address after the
 * program's `syscall` instruction, so the call runs there and jumps back with every register as the
 * kernel left it (also in a child of clone/fork/vfork, whose registers are copies). One stub per
 * call site; slots are written once and never change, so concurrent threads need no lock. */
#define NSTUBS 64
__attribute__((visibility("hidden"))) uint64_t multios_slots[NSTUBS];
extern char multios_exempt_begin[], multios_exempt_end[], multios_restorer[], multios_sigreturn_syscall[],
    multios_stubs[];
__asm__(".text\n"
        ".globl multios_exempt_begin\n.hidden multios_exempt_begin\n"
        "multios_exempt_begin:\n"
        ".globl multios_restorer\n.hidden multios_restorer\n"
        "multios_restorer:\n"
        "  movq $15, %rax\n"
        ".globl multios_sigreturn_syscall\n.hidden multios_sigreturn_syscall\n"
        "multios_sigreturn_syscall:\n"
        "  syscall\n"
        "  hlt\n"
        ".balign 16\n"
        ".globl multios_stubs\n.hidden multios_stubs\n"
        "multios_stubs:\n"
        ".irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63\n"
        "  .balign 16\n"
        "  syscall\n"
        "  jmp *multios_slots+8*\\i(%rip)\n"
        ".endr\n"
        ".globl multios_exempt_end\n.hidden multios_exempt_end\n"
        "multios_exempt_end:\n");

/* The stub for the call site whose return address is `ret`, or NULL when all stubs are taken. */
static char *stub_for(uint64_t ret) {
    for (int i = 0; i < NSTUBS; i++) {
        uint64_t v = __atomic_load_n(&multios_slots[i], __ATOMIC_ACQUIRE);
        if (v == 0) {
            uint64_t zero = 0;
            if (__atomic_compare_exchange_n(&multios_slots[i], &zero, ret, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                return multios_stubs + 16 * i;
            v = zero;
        }
        if (v == ret)
            return multios_stubs + 16 * i;
    }
    return NULL;
}

static long raw6(long nr, long a, long b, long c, long d, long e, long f) {
    long ret;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}

static uint64_t rng_next(void) {
    uint64_t x = rng_state ? rng_state : (__rdtsc() | 1);
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* -ln(u) for u in (0,1], without libm: ln via frexp-free bit tricks + series. */
static double neg_ln(double u) {
    union { double d; uint64_t b; } v = {u};
    int e = (int)((v.b >> 52) & 0x7ff) - 1023;
    v.b = (v.b & ((1ULL << 52) - 1)) | (1023ULL << 52); /* mantissa in [1,2) */
    double m = v.d, y = (m - 1) / (m + 1), y2 = y * y, s = 0, t = y;
    for (int k = 1; k < 40; k += 2) {
        s += t / k;
        t *= y2;
    }
    return -(2 * s + e * 0.6931471805599453);
}

static uint64_t draw(long nr) {
    struct cost *c = &costs[nr];
    switch (c->kind) {
    case K_EXP: {
        double u = ((rng_next() >> 11) + 1) * (1.0 / 9007199254740992.0);
        return (uint64_t)(c->param * neg_ln(u) + 0.5);
    }
    case K_SAMPLES:
        return c->nsamples ? c->samples[rng_next() % c->nsamples] : 0;
    default:
        return (uint64_t)c->param;
    }
}

static uint64_t spin(uint64_t ticks) {
    uint64_t s = __rdtsc(), t;
    do {
        t = __rdtsc();
    } while (t - s < ticks);
    return t - s;
}

static void record(uint64_t t) {
    uint64_t i = __atomic_fetch_add(&nsamp, 1, __ATOMIC_RELAXED);
    if (i < MAX_SAMPLES)
        samples[i] = t;
}

static char *put_u64(char *p, uint64_t v) {
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = '0' + v % 10;
        v /= 10;
    } while (v);
    while (n)
        *p++ = tmp[--n];
    return p;
}

/* Writes this process's counts and samples to STATS_DIR/PID-SEQ.stats and resets them. */
static void dump_stats(void) {
    if (!stats_dir[0])
        return;
    char path[600], *p = path;
    size_t l = strlen(stats_dir);
    memcpy(p, stats_dir, l);
    p += l;
    *p++ = '/';
    p = put_u64(p, (uint64_t)raw6(SYS_getpid, 0, 0, 0, 0, 0, 0));
    *p++ = '-';
    p = put_u64(p, dump_seq++);
    memcpy(p, ".stats", 7);
    int fd = (int)raw6(SYS_openat, AT_FDCWD, (long)path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644, 0, 0);
    if (fd < 0)
        return;
    static char buf[1 << 16];
    size_t n = 0;
#define FLUSH()                                                                                            \
    do {                                                                                                   \
        raw6(SYS_write, fd, (long)buf, (long)n, 0, 0, 0);                                                  \
        n = 0;                                                                                             \
    } while (0)
    for (int pass = 0; pass < 2; pass++) {
        volatile uint64_t *cnt = pass ? loc_cnt : del_cnt;
        for (int i = 0; i < NR_MAX; i++) {
            uint64_t v = cnt[i];
            if (!v)
                continue;
            if (n > sizeof buf - 64)
                FLUSH();
            char *q = buf + n;
            *q++ = pass ? 'L' : 'D';
            *q++ = ' ';
            q = put_u64(q, (uint64_t)i);
            *q++ = ' ';
            q = put_u64(q, v);
            *q++ = '\n';
            n = (size_t)(q - buf);
            cnt[i] = 0;
        }
    }
    uint64_t ns = nsamp < MAX_SAMPLES ? nsamp : MAX_SAMPLES;
    for (uint64_t i = 0; i < ns; i++) {
        if (n > sizeof buf - 32)
            FLUSH();
        char *q = buf + n;
        *q++ = 'S';
        *q++ = ' ';
        q = put_u64(q, samples[i]);
        *q++ = '\n';
        n = (size_t)(q - buf);
    }
    nsamp = 0;
    FLUSH();
    raw6(SYS_close, fd, 0, 0, 0, 0, 0);
}

static void enable_sud(void) {
    selector = SEL_BLOCK;
    prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, (unsigned long)multios_exempt_begin,
          (unsigned long)(multios_exempt_end - multios_exempt_begin), &selector);
}

static void on_sigsys(int sig, siginfo_t *si, void *ctx) {
    (void)sig;
    ucontext_t *uc = ctx;
    greg_t *g = uc->uc_mcontext.gregs;
    selector = SEL_ALLOW;
    long nr = si->si_syscall;
    if (nr < 0 || nr >= NR_MAX) {
        g[REG_RAX] = raw6(nr, g[REG_RDI], g[REG_RSI], g[REG_RDX], g[REG_R10], g[REG_R8], g[REG_R9]);
        selector = SEL_BLOCK;
        return;
    }
    if (nr == SYS_rt_sigreturn) {
        /* The program's own restorer: finish it from the exempt range with its frame untouched. */
        loc_cnt[nr]++;
        g[REG_RAX] = SYS_rt_sigreturn;
        g[REG_RIP] = (greg_t)multios_sigreturn_syscall;
        selector = SEL_BLOCK;
        return;
    }
    if (nr == SYS_rt_sigprocmask) {
        /* Emulated on the mask that sigreturn restores, so it acts on the program's own mask;
         * SIGSYS is never blocked (it would turn the next intercepted call into a kill). */
        loc_cnt[nr]++;
        uint64_t cur, n = 0, *set = (uint64_t *)g[REG_RSI], *old = (uint64_t *)g[REG_RDX];
        memcpy(&cur, &uc->uc_sigmask, 8);
        long how = g[REG_RDI], r = 0;
        if (g[REG_R10] != 8)
            r = -EINVAL;
        else if (set && how != SIG_BLOCK && how != SIG_UNBLOCK && how != SIG_SETMASK)
            r = -EINVAL;
        else {
            if (set)
                n = *set;
            if (old)
                *old = cur;
            if (set)
                cur = how == SIG_BLOCK ? (cur | n) : how == SIG_UNBLOCK ? (cur & ~n) : n;
            cur &= ~((1ULL << (SIGKILL - 1)) | (1ULL << (SIGSTOP - 1)) | (1ULL << (SIGSYS - 1)));
            memcpy(&uc->uc_sigmask, &cur, 8);
        }
        g[REG_RAX] = r;
        selector = SEL_BLOCK;
        return;
    }
    if (rewind_local[nr]) {
        if (nr == SYS_execve || nr == SYS_execveat)
            dump_stats(); /* the counts so far; the new image starts its own */
        char *stub = stub_for((uint64_t)g[REG_RIP]);
        if (stub) {
            loc_cnt[nr]++;
            g[REG_RAX] = nr;
            g[REG_RIP] = (greg_t)stub;
            selector = SEL_BLOCK;
            return;
        }
    }
    if (nr == SYS_exit_group)
        dump_stats();
    if (delegated[nr]) {
        del_cnt[nr]++;
        sched_setaffinity(0, sizeof control_set, &control_set);
        record(spin(draw(nr)));
        g[REG_RAX] = raw6(nr, g[REG_RDI], g[REG_RSI], g[REG_RDX], g[REG_R10], g[REG_R8], g[REG_R9]);
        record(spin(draw(nr)));
        sched_setaffinity(0, sizeof compute_set, &compute_set);
    } else {
        loc_cnt[nr]++;
        g[REG_RAX] = raw6(nr, g[REG_RDI], g[REG_RSI], g[REG_RDX], g[REG_R10], g[REG_R8], g[REG_R9]);
    }
    selector = SEL_BLOCK;
}

struct ksigaction {
    void *handler;
    unsigned long flags;
    void *restorer;
    uint64_t mask;
};

/* SIGSYS uses SA_NODEFER so that an execve re-issued from the handler does not pass a blocked
 * SIGSYS on to the new image. */
static int install(int sig, void (*h)(int, siginfo_t *, void *), unsigned long extra) {
    struct ksigaction sa = {(void *)h, SA_SIGINFO | 0x04000000 /* SA_RESTORER */ | extra, multios_restorer, 0};
    return (int)raw6(SYS_rt_sigaction, sig, (long)&sa, 0, 8, 0, 0);
}

/* ---- configuration ---- */

static const char *skip_ws(const char *p) {
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

static const char *read_u64(const char *p, uint64_t *out) {
    uint64_t v = 0;
    p = skip_ws(p);
    while (*p >= '0' && *p <= '9')
        v = v * 10 + (uint64_t)(*p++ - '0');
    *out = v;
    return p;
}

static void read_cpus(const char *p, cpu_set_t *set) {
    CPU_ZERO(set);
    for (;;) {
        uint64_t c;
        const char *q = read_u64(p, &c);
        if (q == skip_ws(p))
            break;
        CPU_SET((int)c, set);
        p = q;
    }
}

/* Config lines: `compute C...`, `control C...`, `stats DIR`, `local NR...`,
 * `d NR KIND PARAM [N S1..SN]` (KIND 0 const ticks, 1 exp mean ticks, 2 samples). */
static int load_config(const char *file) {
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t cap = 1 << 16, len = 0;
    char *text = malloc(cap + 1);
    for (;;) {
        if (len == cap) {
            cap *= 2;
            text = realloc(text, cap + 1);
        }
        ssize_t r = read(fd, text + len, cap - len);
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    close(fd);
    text[len] = 0;
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        if (!strncmp(line, "compute ", 8))
            read_cpus(line + 8, &compute_set);
        else if (!strncmp(line, "control ", 8))
            read_cpus(line + 8, &control_set);
        else if (!strncmp(line, "stats ", 6))
            strncpy(stats_dir, line + 6, sizeof stats_dir - 1);
        else if (!strncmp(line, "local ", 6)) {
            const char *p = line + 6;
            for (;;) {
                uint64_t nr;
                const char *q = read_u64(p, &nr);
                if (q == skip_ws(p))
                    break;
                if (nr < NR_MAX)
                    rewind_local[nr] = 1;
                p = q;
            }
        } else if (!strncmp(line, "d ", 2)) {
            uint64_t nr, kind, param, n;
            const char *p = read_u64(line + 2, &nr);
            p = read_u64(p, &kind);
            p = read_u64(p, &param);
            if (nr < NR_MAX) {
                delegated[nr] = 1;
                costs[nr].kind = (int)kind;
                costs[nr].param = (double)param;
                if (kind == K_SAMPLES) {
                    p = read_u64(p, &n);
                    costs[nr].samples = malloc(sizeof(uint64_t) * (n ? n : 1));
                    costs[nr].nsamples = n;
                    for (uint64_t i = 0; i < n; i++)
                        p = read_u64(p, &costs[nr].samples[i]);
                }
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    free(text);
    return 0;
}

/* ---- following threads and forks ---- */

struct start {
    void *(*fn)(void *);
    void *arg;
};

static void *thread_start(void *p) {
    struct start s = *(struct start *)p;
    free(p);
    if (active)
        enable_sud();
    return s.fn(s.arg);
}

int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
    static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    if (!real)
        real = dlsym(RTLD_NEXT, "pthread_create");
    struct start *s = malloc(sizeof *s);
    if (!s)
        return EAGAIN;
    s->fn = fn;
    s->arg = arg;
    int r = real(t, attr, thread_start, s);
    if (r)
        free(s);
    return r;
}

static void after_fork_child(void) {
    for (int i = 0; i < NR_MAX; i++)
        del_cnt[i] = loc_cnt[i] = 0;
    nsamp = 0;
    dump_seq = 0;
    if (active)
        enable_sud();
}

__attribute__((constructor)) static void multios_preload_init(void) {
    const char *cfg = getenv("MULTIOS_EMU_CONFIG");
    if (!cfg || load_config(cfg) != 0)
        return;
    if (install(SIGSYS, on_sigsys, SA_NODEFER) != 0)
        return;
    pthread_atfork(NULL, NULL, after_fork_child);
    active = 1;
    enable_sud();
}
