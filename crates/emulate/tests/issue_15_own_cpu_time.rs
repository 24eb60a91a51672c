//! Issue #15 (the twenty-second session's discovery): under `shm` the delegate threads spin and make the
//! program's calls inside its process, so its process CPU clock (CLOCK_PROCESS_CPUTIME_ID and the
//! own-pid clocks of `clock_getcpuclockid`), getrusage(RUSAGE_SELF) and times() counted them: a
//! single busy thread making calls read 2.00-2.10 times its thread clock. The preload library now
//! subtracts its delegates' CPU time (`csrc/owncpu.c`). The program prints "ok" lines natively
//! (one thread, a sleep, two threads, a forked child; ratios within [0.9, 1.1]); under `shm`, both
//! interceptions, with the clock calls delegated (`all`) and with them local beside a delegated
//! getppid, it must print the same.

mod common;
use common::{cc, config, native};
use multios_emulate::{Delegation, Interception, Mechanism};

/// The LWK's test program (`crates/lwk/tests/c/proccpu.c`), run with "noexec": the same checks
/// but the exec (the preload library starts afresh in a new image: a documented limit).
fn proccpu_source() -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../lwk/tests/c/proccpu.c");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn issue_15_shm_delegates_are_not_the_programs_cpu_time() {
    let dir = common::tmpdir("owncpu");
    let prog = cc(&dir, "proccpu", &proccpu_source());
    let want = native(&format!("{} noexec", prog.display()));
    assert!(
        !want.contains("OUT OF BOUNDS") && want.contains("process clock / thread clock: ok"),
        "natively: {want}"
    );
    let calls_local = Delegation::from_fn("getppid and nanosleep", |n| n == "getppid" || n == "nanosleep");
    for d in [Delegation::all(), calls_local] {
        for i in [Interception::Eager, Interception::Lazy] {
            let out = dir.join(format!("out-{}.txt", i.name()));
            let sh = format!("{} noexec > {}", prog.display(), out.display());
            let r = multios_emulate::run_with(&config(Mechanism::Shm, d.clone(), 0.0, &["sh", "-c", &sh]), i)
                .unwrap_or_else(|e| panic!("proccpu under shm ({}): {e}", i.name()));
            assert_eq!(r.exit, multios_emulate::Exit::Code(0), "{:?}", r.warnings);
            let got = std::fs::read_to_string(&out).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
            assert_eq!(
                got,
                want,
                "proccpu under shm ({}, {} delegated)",
                i.name(),
                d.label
            );
        }
    }
}
