//! Issue #4, pass-through target: the eager interception of `shm` and `migrate` (every `syscall`
//! rewritten at start-up with an x86 decoder, Syscall User Dispatch off). Its decoder against
//! objdump, its counts against the lazy interception, and the calls that used to need the SIGSYS
//! handler (rt_sigreturn, clone/fork/vfork, execve, mmap of new code).

mod common;
use multios_emulate::{Delegation, Exit, Interception, Mechanism, Report};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const X86LEN: &str = concat!(env!("OUT_DIR"), "/multios-x86len");

/// Instruction start addresses (hex text) that objdump -d finds in `file`.
fn objdump_starts(file: &Path) -> Vec<u64> {
    let out = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn", "-w"])
        .arg(file)
        .output()
        .unwrap_or_else(|e| panic!("running objdump (apt-get install binutils): {e}"));
    assert!(out.status.success(), "objdump -d {} failed", file.display());
    let text = String::from_utf8_lossy(&out.stdout);
    let mut v: Vec<u64> = text
        .lines()
        .filter_map(|l| {
            let (addr, rest) = l.trim_start().split_once(":\t")?;
            if rest.is_empty() {
                return None;
            }
            u64::from_str_radix(addr, 16).ok()
        })
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// (instruction starts, undecodable bytes) of the decoder's linear sweep of `file`.
fn decoder_starts(file: &Path) -> (Vec<u64>, usize) {
    let out = Command::new(X86LEN)
        .arg(file)
        .output()
        .unwrap_or_else(|e| panic!("running {X86LEN}: {e}"));
    assert!(out.status.success(), "{X86LEN} {} failed", file.display());
    let text = String::from_utf8_lossy(&out.stdout);
    let bad = text.lines().filter(|l| l.starts_with("bad ")).count();
    let mut v: Vec<u64> = text
        .lines()
        .filter(|l| !l.starts_with("bad "))
        .filter_map(|l| u64::from_str_radix(l, 16).ok())
        .collect();
    v.sort_unstable();
    (v, bad)
}

fn which(tool: &str) -> Option<PathBuf> {
    let o = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .ok()?;
    let p = String::from_utf8_lossy(&o.stdout).trim().to_string();
    (o.status.success() && !p.is_empty()).then(|| PathBuf::from(p))
}

#[test]
fn issue_4_decoder_matches_objdump_on_whole_text_sections() {
    let mut files: Vec<PathBuf> = [
        "/lib/x86_64-linux-gnu/libc.so.6",
        "/lib64/ld-linux-x86-64.so.2",
        "/lib/x86_64-linux-gnu/libm.so.6",
        "/lib/x86_64-linux-gnu/libstdc++.so.6",
        "/bin/busybox",
    ]
    .iter()
    .map(PathBuf::from)
    .filter(|p| p.exists())
    .collect();
    files.extend(["bzip2", "python3", "perl"].iter().filter_map(|t| which(t)));
    // Only ELF files (a `python3` on PATH may be a shell shim).
    files.retain(|p| std::fs::read(p).is_ok_and(|b| b.starts_with(b"\x7fELF")));
    assert!(files.len() >= 3, "libc, ld.so and bzip2 are required: {files:?}");
    let mut report = Vec::new();
    for f in &files {
        let want = objdump_starts(f);
        let (got, bad) = decoder_starts(f);
        let set: std::collections::HashSet<u64> = want.iter().copied().collect();
        let mine: std::collections::HashSet<u64> = got.iter().copied().collect();
        let only_mine = got.iter().filter(|a| !set.contains(a)).count();
        let only_objdump = want.iter().filter(|a| !mine.contains(a)).count();
        report.push(format!(
            "{}: {} instructions, decoder-only {only_mine}, objdump-only {only_objdump}, undecodable {bad}",
            f.display(),
            want.len()
        ));
        assert!(want.len() > 1000, "{}: objdump found too little", f.display());
    }
    eprintln!("{}", report.join("\n"));
    for r in &report {
        assert!(
            r.contains("decoder-only 0, objdump-only 0, undecodable 0"),
            "instruction boundaries differ from objdump: {r}"
        );
    }
    // A library with data tables inside .text (OpenSSL's generated assembly): the sweep meets
    // undecodable bytes there, which is what makes the rewriter distrust such a section.
    let crypto = Path::new("/lib/x86_64-linux-gnu/libcrypto.so.3");
    if crypto.exists() {
        let (_, bad) = decoder_starts(crypto);
        assert!(bad > 0, "libcrypto: expected undecodable data in .text");
    }
}

/// Compiles `src` (C) into `dir/name` with `flags`.
fn cc(dir: &Path, name: &str, src: &str, flags: &[&str]) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).unwrap_or_else(|e| panic!("writing {}: {e}", c.display()));
    let out = dir.join(name);
    let st = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&out)
        .arg(&c)
        .args(flags)
        .status()
        .unwrap_or_else(|e| panic!("running cc: {e}"));
    assert!(st.success(), "compiling {}", c.display());
    out
}

fn run(m: Mechanism, d: Delegation, argv: &[&str], i: Interception) -> Report {
    let cfg = common::config(m, d, 0.0, argv);
    multios_emulate::run_with(&cfg, i)
        .unwrap_or_else(|e| panic!("{argv:?} under {} ({}): {e}", m.name(), i.name()))
}

fn counts(r: &Report) -> BTreeMap<String, (u64, u64)> {
    r.syscalls
        .iter()
        .map(|(k, c)| (k.clone(), (c.delegated, c.local.unwrap_or(0))))
        .collect()
}

const SIMPLE: &str = r#"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void) {
    for (int i = 0; i < 1000; i++) syscall(SYS_getppid);
    for (int i = 0; i < 50; i++) {
        int fd = open("/dev/null", O_WRONLY);
        write(fd, "x", 1);
        close(fd);
        char *p = malloc(1 << 20);
        memset(p, 1, 1 << 20);
        free(p);
    }
    /* Every trampoline entry must reach the kernel with the number intact (the sled at address
     * 0 once turned entry 511 into xchg %r8,%rax: getuid, nr 102, ran as whatever r8 held). */
    char self[64];
    ssize_t n = readlink("/proc/self", self, sizeof self - 1);
    if (n <= 0) return 2;
    self[n] = 0;
    if (getpid() != atoi(self)) return 3;
    if ((long)getuid() != syscall(SYS_getuid) || getuid() > 100000) return 4;
    /* unassigned numbers (335 is uretprobe since Linux 6.11): -1/ENOSYS through every entry */
    for (long nr = 336; nr < 512; nr = nr == 423 ? 480 : nr + 1)
        if (syscall(nr, 0, 0, 0, 0, 0, 0) != -1) return 5;
    printf("done\n");
    return 0;
}
"#;

#[test]
fn issue_4_sud_off_counts_equal_the_lazy_mode() {
    let dir = common::tmpdir("sudoff-counts");
    let prog = cc(&dir, "simple", SIMPLE, &[]);
    let p = prog.to_str().unwrap_or_default();
    for m in [Mechanism::Shm, Mechanism::Migrate] {
        let eager = run(m, Delegation::all(), &[p], Interception::Eager);
        let lazy = run(m, Delegation::all(), &[p], Interception::Lazy);
        assert_eq!(eager.exit, Exit::Code(0), "{}: {:?}", m.name(), eager.warnings);
        assert_eq!(lazy.exit, Exit::Code(0));
        assert_eq!(
            eager.interception.as_deref(),
            Some("eager, SUD off"),
            "{}",
            m.name()
        );
        assert_eq!(lazy.interception.as_deref(), Some("lazy"));
        assert!(
            eager.delegated_total > 1100,
            "{}: {}",
            m.name(),
            eager.delegated_total
        );
        assert_eq!(
            counts(&eager),
            counts(&lazy),
            "{}: eager and lazy counts differ",
            m.name()
        );
    }
    std::fs::remove_dir_all(dir).ok();
}

const SIGNALS: &str = r#"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
static volatile long seen, sum;
static void h(int sig, siginfo_t *si, void *ctx) {
    (void)si; (void)ctx;
    seen++;
    sum += syscall(SYS_getppid) > 0;
    write(1, sig == SIGUSR1 ? "1" : "2", 1);
}
int main(void) {
    static char alt[1 << 16];
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt};
    if (sigaltstack(&ss, NULL)) return 10;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = h;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(SIGUSR2, &sa, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    for (int i = 0; i < 20; i++) {
        /* callee-saved and vector registers must survive the handler's sigreturn */
        volatile double d = i * 1.5;
        raise(i % 2 ? SIGUSR1 : SIGUSR2);
        sigprocmask(SIG_BLOCK, &set, NULL);
        raise(SIGUSR1); /* pending until unblocked */
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        if (d != i * 1.5) return 11;
    }
    printf("\nseen %ld sum %ld\n", seen, sum);
    return seen == 40 && sum == 40 ? 0 : 12;
}
"#;

#[test]
fn issue_4_sud_off_signal_handlers_return_through_rt_sigreturn() {
    let dir = common::tmpdir("sudoff-signals");
    let prog = cc(&dir, "signals", SIGNALS, &[]);
    let p = prog.to_str().unwrap_or_default();
    for m in [Mechanism::Shm, Mechanism::Migrate] {
        for d in [Delegation::none(), Delegation::all()] {
            let r = run(m, d, &[p], Interception::Eager);
            assert_eq!(r.exit, Exit::Code(0), "{}: {:?}", m.name(), r.warnings);
            assert_eq!(r.interception.as_deref(), Some("eager, SUD off"));
            let c = counts(&r);
            assert_eq!(
                c.get("rt_sigreturn").map(|x| x.1),
                Some(40),
                "{}: one rt_sigreturn per handler: {c:?}",
                m.name()
            );
        }
    }
    std::fs::remove_dir_all(dir).ok();
}

const PROCS: &str = r#"
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
extern char **environ;
static long calls[4];
static void *worker(void *a) {
    long i = (long)a;
    for (int k = 0; k < 2000; k++) calls[i] += syscall(SYS_getppid) > 0;
    return NULL;
}
static int cloned(void *a) {
    (void)a;
    write(1, "clone child\n", 12);
    return 7;
}
int main(void) {
    pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < 4; i++) if (calls[i] != 2000) return 20 + i;
    fflush(stdout);
    int st;
    pid_t p = fork();
    if (p == 0) { write(1, "fork child\n", 11); _exit(3); }
    waitpid(p, &st, 0);
    if (WEXITSTATUS(st) != 3) return 30;
    volatile int local = 5;
    p = vfork();
    if (p == 0) { execl("/bin/true", "true", (char *)NULL); _exit(99); }
    waitpid(p, &st, 0);
    if (WEXITSTATUS(st) != 0 || local != 5) return 31;
    p = vfork();
    if (p == 0) _exit(4);
    waitpid(p, &st, 0);
    if (WEXITSTATUS(st) != 4) return 32;
    char *stack = malloc(1 << 16);
    p = clone(cloned, stack + (1 << 16), CLONE_VM | SIGCHLD, NULL);
    waitpid(p, &st, 0);
    if (WEXITSTATUS(st) != 7) return 33;
    char *argv[] = {"echo", "spawned", NULL};
    if (posix_spawnp(&p, "echo", NULL, NULL, argv, environ)) return 34;
    waitpid(p, &st, 0);
    if (WEXITSTATUS(st) != 0) return 35;
    printf("all ok\n");
    return 0;
}
"#;

#[test]
fn issue_4_sud_off_follows_threads_fork_vfork_clone_and_spawn() {
    let dir = common::tmpdir("sudoff-procs");
    let prog = cc(&dir, "procs", PROCS, &["-pthread"]);
    let p = prog.to_str().unwrap_or_default();
    for m in [Mechanism::Shm, Mechanism::Migrate] {
        for d in [Delegation::none(), Delegation::all()] {
            let label = d.label.clone();
            let r = run(m, d, &[p], Interception::Eager);
            assert_eq!(r.exit, Exit::Code(0), "{} {label}: {:?}", m.name(), r.warnings);
            assert_eq!(r.interception.as_deref(), Some("eager, SUD off"));
            let c = counts(&r);
            let getppid = c.get("getppid").map(|x| x.0 + x.1).unwrap_or(0);
            assert!(getppid >= 8000, "{} {label}: getppid {getppid}", m.name());
            let write = c.get("write").map(|x| x.0 + x.1).unwrap_or(0);
            assert!(
                write >= 4,
                "{} {label}: children's writes are counted: {c:?}",
                m.name()
            );
        }
    }
    std::fs::remove_dir_all(dir).ok();
}

const LIB: &str = r#"
long lib_calls(long n) {
    long sum = 0;
    for (long i = 0; i < n; i++) {
        long r;
        __asm__ volatile("syscall" : "=a"(r) : "a"(110L) : "rcx", "r11", "memory"); /* getppid */
        sum += r > 0;
    }
    return sum;
}
"#;

const DLOPEN: &str = r#"
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
    (void)argc;
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) { fprintf(stderr, "%s\n", dlerror()); return 40; }
    long (*f)(long) = (long (*)(long))dlsym(h, "lib_calls");
    if (!f || f(3000) != 3000) return 41;
    printf("lib ok\n");
    return 0;
}
"#;

#[test]
fn issue_4_sud_off_rewrites_code_loaded_by_dlopen() {
    let dir = common::tmpdir("sudoff-dlopen");
    let lib = cc(&dir, "libraw.so", LIB, &["-shared", "-fPIC"]);
    let prog = cc(&dir, "dl", DLOPEN, &["-ldl"]);
    let (p, l) = (
        prog.to_str().unwrap_or_default(),
        lib.to_str().unwrap_or_default(),
    );
    for m in [Mechanism::Shm, Mechanism::Migrate] {
        let d = Delegation::from_fn("getppid", |n| n == "getppid");
        let r = run(m, d, &[p, l], Interception::Eager);
        assert_eq!(r.exit, Exit::Code(0), "{}: {:?}", m.name(), r.warnings);
        assert_eq!(r.interception.as_deref(), Some("eager, SUD off"));
        let n = r.syscalls.get("getppid").map(|c| c.delegated).unwrap_or(0);
        assert_eq!(
            n,
            3000,
            "{}: the library's raw syscalls must be delegated",
            m.name()
        );
    }
    std::fs::remove_dir_all(dir).ok();
}

/// Bytes 0f 05 behind an invalid opcode (06) in `.text` and in no function of `.eh_frame`: the
/// rewriter cannot classify them, so Syscall User Dispatch must stay on (the lazy machinery then
/// serves every call of a SIGSYS-routed number through the already rewritten sites).
const UNSURE_BLOB: &str = r#"
__asm__(".text\n.globl multios_test_blob\nmultios_test_blob:\n.byte 0x06, 0x06, 0x0f, 0x05, 0xc3\n");
"#;

#[test]
fn issue_4_eager_keeps_sud_on_for_bytes_it_cannot_classify() {
    let dir = common::tmpdir("sudoff-unsure");
    for (name, src, flags) in [("signals", SIGNALS, &[][..]), ("procs", PROCS, &["-pthread"][..])] {
        let prog = cc(&dir, name, &format!("{src}\n{UNSURE_BLOB}"), flags);
        let p = prog.to_str().unwrap_or_default();
        for m in [Mechanism::Shm, Mechanism::Migrate] {
            for d in [Delegation::none(), Delegation::all()] {
                let label = d.label.clone();
                let r = run(m, d, &[p], Interception::Eager);
                assert_eq!(
                    r.exit,
                    Exit::Code(0),
                    "{name} under {} {label}: {:?}",
                    m.name(),
                    r.warnings
                );
                assert_eq!(r.interception.as_deref(), Some("eager, SUD on"), "{name}");
                assert!(
                    r.warnings.iter().any(|w| w.contains("could not be classified")),
                    "{name}: {:?}",
                    r.warnings
                );
            }
        }
    }
    std::fs::remove_dir_all(dir).ok();
}

/// The same programs under the lazy interception (SUD on from the start, sites rewritten at their
/// first call): fork and vfork children run without SUD until their atfork handler, threads
/// before the pthread_create wrapper; calls through rewritten sites must work in all of them.
#[test]
fn issue_4_lazy_interception_runs_the_same_programs() {
    let dir = common::tmpdir("lazy-procs");
    for (name, src, flags) in [("signals", SIGNALS, &[][..]), ("procs", PROCS, &["-pthread"][..])] {
        let prog = cc(&dir, name, src, flags);
        let p = prog.to_str().unwrap_or_default();
        for m in [Mechanism::Shm, Mechanism::Migrate] {
            for d in [Delegation::none(), Delegation::all()] {
                let label = d.label.clone();
                let r = run(m, d, &[p], Interception::Lazy);
                assert_eq!(
                    r.exit,
                    Exit::Code(0),
                    "{name} under {} {label} (lazy): {:?}",
                    m.name(),
                    r.warnings
                );
                assert_eq!(r.interception.as_deref(), Some("lazy"));
            }
        }
    }
    std::fs::remove_dir_all(dir).ok();
}

/// The rewritten sites call into a page at address 0, which must not make a NULL-pointer access
/// succeed: natively it faults, and programs count on that (HotSpot's implicit null checks, Go's
/// nil checks). The page was readable, so a read of address 8 returned the sled's bytes
/// (0x40eb40eb) and a JVM crashed on them; it is now execute-only (x86's execute-only protection
/// key), or, on a CPU without protection keys, not mapped at all (every call through SUD). Both
/// interceptions, both mechanisms that rewrite: the read and a write die of SIGSEGV as natively,
/// and a handler sees the address with SEGV_MAPERR, as natively.
#[test]
fn emulated_null_pointer_accesses_fault_as_natively() {
    const NULLS: &str = r#"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static void on_segv(int sig, siginfo_t *si, void *uc) {
    (void)sig; (void)uc;
    char b[64];
    int n = snprintf(b, sizeof b, "fault at %lu code %d\n", (unsigned long)si->si_addr, si->si_code);
    write(1, b, n);
    _exit(0);
}
int main(int argc, char **argv) {
    if (argc > 2 && argv[2][0] == 'h') {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_segv;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGSEGV, &sa, 0);
        struct sigaction now;
        sigaction(SIGSEGV, 0, &now);
        if (now.sa_sigaction != on_segv)
            printf("the program is not shown its own handler\n");
        fflush(stdout);
    }
    volatile unsigned *p = (volatile unsigned *)(unsigned long)atoi(argv[1]);
    if (argc > 2 && argv[2][0] == 'w')
        *p = 1;
    printf("read %#x\n", *p);
    return 0;
}
"#;
    let dir = common::tmpdir("sudoff-null");
    let prog = cc(&dir, "nulls", NULLS, &[]);
    let p = prog.to_str().unwrap_or_default();
    for m in [Mechanism::Shm, Mechanism::Migrate] {
        for i in [Interception::Eager, Interception::Lazy] {
            for addr in ["8", "600"] {
                let r = run(m, Delegation::all(), &[p, addr], i);
                assert_eq!(
                    r.exit,
                    Exit::Signal(11),
                    "read of {addr} under {} ({})",
                    m.name(),
                    i.name()
                );
                let r = run(m, Delegation::all(), &[p, addr, "w"], i);
                assert_eq!(
                    r.exit,
                    Exit::Signal(11),
                    "write of {addr} under {} ({})",
                    m.name(),
                    i.name()
                );
            }
        }
    }
    // With a handler: it sees the address and the code of a fault where nothing is mapped
    // (SEGV_MAPERR, not the protection key's SEGV_PKUERR: Go's runtime calls any other code at
    // address 0 "unexpected" and dies instead of panicking with a nil dereference), and asking for
    // the handler gives the program's own. The emulated run's stdout is the test's, so the lines
    // are compared through a file.
    let native = Command::new(&prog)
        .args(["8", "h"])
        .output()
        .expect("run natively");
    let want = String::from_utf8_lossy(&native.stdout).to_string();
    assert_eq!(want, "fault at 8 code 1\n");
    for m in [Mechanism::Shm, Mechanism::Migrate] {
        for i in [Interception::Eager, Interception::Lazy] {
            let out = dir.join(format!("handled-{}-{}.txt", m.name(), i.name()));
            let sh = format!("{p} 8 h > {}", out.display());
            let r = run(m, Delegation::all(), &["sh", "-c", &sh], i);
            assert_eq!(r.exit, Exit::Code(0), "under {} ({})", m.name(), i.name());
            let text = std::fs::read_to_string(&out).unwrap_or_default();
            assert_eq!(text, want, "under {} ({})", m.name(), i.name());
        }
    }
    std::fs::remove_dir_all(dir).ok();
}

/// A JVM under the rewriting mechanisms (found this way: HotSpot crashed in compiled HashMap.get
/// when a NULL read returned the trampoline page's bytes). Its implicit null checks are SIGSEGVs
/// it handles: a loop whose compiled code takes thousands of NullPointerExceptions, threads and a
/// child process; the output must be native's.
#[test]
fn a_jvm_runs_under_the_rewriting_mechanisms_as_natively() {
    const PROG: &str = r#"
public class Nulls {
    public static void main(String[] a) throws Exception {
        long c = 0;
        String s = null;
        for (int i = 0; i < 300000; i++) {
            s = (i % 3 == 0) ? null : "xy";
            try { c += s.length(); } catch (NullPointerException e) { c += 7; }
        }
        final long[] r = new long[4];
        Thread[] ts = new Thread[4];
        for (int k = 0; k < 4; k++) {
            final int j = k;
            ts[k] = new Thread(() -> {
                java.util.HashMap<Integer, Integer> m = new java.util.HashMap<>();
                for (int i = 0; i < 200000; i++) m.merge(i % 1000, i ^ j, Integer::sum);
                for (int v : m.values()) r[j] += v;
            });
            ts[k].start();
        }
        for (Thread t : ts) t.join();
        Process p = new ProcessBuilder("echo", "child").start();
        String child = new String(p.getInputStream().readAllBytes()).trim();
        System.out.println("nulls " + c + " maps " + (r[0] + r[1] + r[2] + r[3]) + " " + child + " " + p.waitFor());
    }
}
"#;
    let dir = common::tmpdir("sudoff-jvm");
    let src = dir.join("Nulls.java");
    std::fs::write(&src, PROG).expect("write the Java source");
    let s = src.to_str().unwrap_or_default();
    let native = Command::new("java")
        .arg(s)
        .output()
        .unwrap_or_else(|e| panic!("running java (scripts/deps.sh installs openjdk-17-jdk-headless): {e}"));
    assert!(
        native.status.success(),
        "java natively: {}",
        String::from_utf8_lossy(&native.stderr)
    );
    let want = String::from_utf8_lossy(&native.stdout).to_string();
    assert!(want.starts_with("nulls 1100000 maps "), "{want}");
    for m in [Mechanism::Shm, Mechanism::Migrate] {
        let out = dir.join(format!("out-{}.txt", m.name()));
        // In the scratch directory: a JVM that crashes leaves its hs_err file there.
        let sh = format!("cd {} && java {s} > {}", dir.display(), out.display());
        let r = run(m, Delegation::all(), &["sh", "-c", &sh], Interception::Eager);
        assert_eq!(r.exit, Exit::Code(0), "java under {}: {:?}", m.name(), r.warnings);
        let got = std::fs::read_to_string(&out).unwrap_or_default();
        assert_eq!(got, want, "java under {}", m.name());
    }
    std::fs::remove_dir_all(dir).ok();
}
