//! Issue #15 (`validate --terms wakeup`): with `--per-process`, the eBPF backend records how far
//! apart each thread's calls come. A C program built here makes 200 getppid calls each after a
//! 50 µs busy wait, then 400 back to back; getppid's gap histogram holds every call, the spaced
//! ones in the 32–64 µs bucket (or the next, for a call preempted in its wait) and the burst under
//! 4 µs. Without `--per-process` the profile records no gaps and stays version 2.

mod common;

use common::{compile_c, require_root, scratch, serial};
use multios_profile::Profile;
use multios_profiler::{Backend, Options};

const SPACED: &str = r#"
#include <stdint.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

int main(void) {
    for (int i = 0; i < 200; i++) {
        uint64_t t0 = now_ns();
        while (now_ns() - t0 < 50000)
            ;
        (void)getppid();
    }
    for (int i = 0; i < 400; i++)
        (void)getppid();
    return 0;
}
"#;

fn run(argv: &[String], per_process: bool) -> Profile {
    multios_profiler::profile(&Options {
        backend: Some(Backend::Ebpf),
        command: argv.iter().map(std::ffi::OsString::from).collect(),
        per_process,
        ..Options::default()
    })
    .unwrap_or_else(|e| panic!("profiling {argv:?} failed: {e}"))
}

#[test]
fn issue_15_ebpf_records_the_gaps_between_a_threads_calls() {
    let _g = serial();
    require_root();
    let dir = scratch("gaps");
    let exe = compile_c(&dir, "spaced", SPACED, &[]).display().to_string();
    let p = run(std::slice::from_ref(&exe), true);
    assert_eq!(p.exit.as_ref().and_then(|e| e.code), Some(0), "{:?}", p.exit);
    let g = p.syscall("getppid").expect("getppid in the profile");
    assert_eq!(g.count, 600, "{g:?}");
    let h = &g.gap_hist_log2_ns.0;
    assert_eq!(h.iter().sum::<u64>(), 600, "every call has a gap: {h:?}");
    let at = |k: usize| h.get(k).copied().unwrap_or(0);
    // 50 µs: bucket 15 is [32.8, 65.5) µs.
    let spaced = at(15) + at(16);
    assert!(
        spaced >= 190,
        "the 200 spaced calls: {spaced} in buckets 15–16 of {h:?}"
    );
    let burst: u64 = h.iter().take(12).sum();
    assert!(burst >= 380, "the 400 back to back under 4 µs: {burst} of {h:?}");
    // Every call of the run has its gap.
    for c in &p.syscalls {
        assert_eq!(c.gap_hist_log2_ns.total(), c.count, "{}: {c:?}", c.name);
    }
    assert_eq!(p.written_version(), 7, "gaps say version 7");
    let plain = run(std::slice::from_ref(&exe), false);
    assert!(!plain.has_gaps(), "gaps only with --per-process");
    assert_eq!(plain.written_version(), 2);
}
