//! Issue #4 (the emulator's interception): a `syscall` in a function that keeps data in the red
//! zone, the 128 bytes under %rsp a leaf function may use without moving %rsp, is not rewritten
//! into `call *%rax`, whose return address would land on that data (`csrc/rewrite.c`,
//! `uses_red_zone`). liburing 2.3 does this twice: `io_uring_register_eventfd` passes the address
//! of a red-zone int (the eventfd's number became half a return address: EBADF, and the program
//! then read the eventfd for ever) and `_io_uring_get_cqe` keeps a pointer at -8(%rsp) across
//! io_uring_enter (SIGSEGV). Each program runs natively and under shm and migrate, with the same
//! output expected.

mod common;
use multios_emulate::{Delegation, Exit, Mechanism};

/// A leaf function storing a value at -8(%rsp), making a system call and reading the value back;
/// prints it, so that a return address written over it shows.
const LEAF_C: &str = r#"
#include <stdio.h>
__attribute__((noinline)) static long kept(long v) {
    long out;
    __asm__ volatile("mov %[v], -8(%%rsp)\n\t"
                     "mov $110, %%eax\n\t" /* getppid */
                     "syscall\n\t"
                     "mov -8(%%rsp), %[o]\n\t"
                     : [o] "=r"(out)
                     : [v] "r"(v)
                     : "rax", "rcx", "r11", "memory");
    return out;
}
int main(void) {
    long bad = 0;
    for (long i = 0; i < 1000; i++)
        bad += kept(0x5eed0000 + i) != 0x5eed0000 + i;
    printf("values kept under the stack pointer: %ld of 1000 overwritten\n", bad);
    return 0;
}
"#;

/// liburing: an eventfd registered for completions, a batch of writes waited for one by one.
const URING_C: &str = r#"
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <fcntl.h>
#include <unistd.h>
int main(int argc, char **argv) {
    (void)argc;
    struct io_uring ring;
    if (io_uring_queue_init(8, &ring, 0)) return 2;
    int efd = eventfd(0, 0);
    printf("register eventfd: %d\n", io_uring_register_eventfd(&ring, efd));
    int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
    static char buf[16][4096];
    int done = 0;
    for (int k = 0; k < 16; k++) {
        memset(buf[k], 'a' + k, sizeof buf[k]);
        struct io_uring_sqe *s = io_uring_get_sqe(&ring);
        io_uring_prep_write(s, fd, buf[k], sizeof buf[k], 4096 * k);
        io_uring_submit(&ring);
        struct io_uring_cqe *c;
        if (io_uring_wait_cqe(&ring, &c) == 0 && c->res == 4096) done++;
        io_uring_cqe_seen(&ring, c);
    }
    eventfd_t n = 0;
    eventfd_read(efd, &n);
    printf("writes complete: %d of 16, eventfd counted %llu\n", done, (unsigned long long)n);
    return 0;
}
"#;

fn native(argv: &[&str]) -> String {
    let o = std::process::Command::new(argv[0])
        .args(&argv[1..])
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", argv[0]));
    assert!(o.status.success(), "{argv:?} natively: {:?}", o.status);
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `argv` under `m` (everything delegated, f_c 0) through `sh -c "… > FILE"`: its output.
fn emulated(m: Mechanism, dir: &std::path::Path, argv: &[&str]) -> (String, Option<u64>) {
    let out = dir.join(format!("out-{}", m.name()));
    let cmd = format!("{} > {}", argv.join(" "), out.display());
    let r = common::run(
        m,
        Delegation::all(),
        0.0,
        &["timeout", "-s", "KILL", "60", "sh", "-c", &cmd],
    );
    assert_eq!(
        r.exit,
        Exit::Code(0),
        "{argv:?} under {}: {:?}, warnings {:?}",
        m.name(),
        r.exit,
        r.warnings
    );
    assert_eq!(
        r.interception.as_deref(),
        Some("eager, SUD off"),
        "{argv:?} under {}",
        m.name()
    );
    let text = std::fs::read_to_string(&out).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
    (text, r.red_zone_sites)
}

#[test]
fn issue_4_a_value_kept_under_the_stack_pointer_across_a_syscall_survives() {
    let dir = common::tmpdir("redzone-leaf");
    let exe = common::cc(&dir, "leaf", LEAF_C);
    let argv = [exe.to_str().expect("a UTF-8 scratch path")];
    let want = native(&argv);
    assert!(want.contains(": 0 of 1000"), "natively: {want}");
    for m in [Mechanism::Shm, Mechanism::Migrate] {
        let (got, sites) = emulated(m, &dir, &argv);
        assert_eq!(got, want, "under {}", m.name());
        // The program's own site, and whatever glibc and ld.so have.
        assert!(
            sites.unwrap_or(0) >= 1,
            "red-zone sites under {}: {sites:?}",
            m.name()
        );
    }
}

#[test]
fn issue_4_liburing_programs_run_under_eager_rewriting_as_natively() {
    let dir = common::tmpdir("redzone-uring");
    let src = dir.join("uring.c");
    std::fs::write(&src, URING_C).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
    let exe = dir.join("uring");
    let st = std::process::Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg("-luring")
        .status()
        .unwrap_or_else(|e| panic!("running cc: {e}"));
    assert!(
        st.success(),
        "compiling {} with -luring (liburing-dev, scripts/deps.sh)",
        src.display()
    );
    let file = dir.join("data");
    let argv = [
        exe.to_str().expect("a UTF-8 scratch path"),
        file.to_str().expect("a UTF-8 scratch path"),
    ];
    let want = native(&argv);
    assert!(
        want.contains("register eventfd: 0") && want.contains("16 of 16"),
        "natively: {want}"
    );
    for m in [Mechanism::Shm, Mechanism::Migrate] {
        let (got, _) = emulated(m, &dir, &argv);
        assert_eq!(got, want, "under {}", m.name());
    }
}
