//! Issue #3 (found 2026-11-28 by a discovery helper): the in-process counting (`profile --backend
//! inproc`, the emulator's mechanisms) counted calls the program never made. The preload's
//! pthread_create wrapper malloc'ed a start record that the new thread freed, and that first free
//! gave every new thread a tcache and a malloc arena of its own — an mmap of 64 MiB and munmaps to
//! align it — which a thread making no allocation natively never has: 8 such threads counted 13
//! munmaps where natively they make 4 after main (glibc's stack cache lets 4 of 8 stacks go).
//! The start records now come from a static pool. Needs root (the trampoline page at address 0).

use std::process::Command;

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
use scratch::Scratch;

const THREADS_C: &str = r#"
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
static void *f(void *a) { for (int i = 0; i < 1000; i++) syscall(SYS_getppid); return a; }
int main(void) {
    pthread_t t[8];
    for (int i = 0; i < 8; i++) pthread_create(&t[i], 0, f, 0);
    for (int i = 0; i < 8; i++) pthread_join(t[i], 0);
    printf("ok\n");
    return 0;
}
"#;

#[test]
fn issue_3_new_threads_get_no_malloc_arena_from_the_preload() {
    // SAFETY: geteuid cannot fail.
    assert_eq!(unsafe { libc::geteuid() }, 0, "the in-process backend needs root");
    let dir = Scratch::new("multios-cli", "inproc-threads");
    let src = dir.path().join("threads.c");
    std::fs::write(&src, THREADS_C).expect("write threads.c");
    let prog = dir.path().join("threads");
    let cc = Command::new("gcc")
        .args(["-O2", "-pthread", "-o"])
        .arg(&prog)
        .arg(&src)
        .status()
        .expect("gcc (apt-get install gcc)");
    assert!(cc.success());
    let out = dir.path().join("p.json");
    let run = Command::new(env!("CARGO_BIN_EXE_multios"))
        .args(["profile", "--backend", "inproc", "-o"])
        .arg(&out)
        .arg("--")
        .arg(&prog)
        .output()
        .expect("run multios profile");
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let p = multios_profile::load(&out).expect("the profile loads");
    let n = |s: &str| p.syscall(s).map_or(0, |c| c.count);
    assert_eq!(n("getppid"), 8000);
    // After main: the 4 thread stacks glibc's cache does not keep. Before the fix: 13 (an arena per
    // thread). A few more are tolerated for a libc that caches fewer stacks.
    assert!(n("munmap") <= 8, "munmap counted {} times", n("munmap"));
    assert!(n("mmap") <= 12, "mmap counted {} times", n("mmap"));
}
