//! Issue #3, `multios profile import` of `perf trace -s`: a task made while perf traces returns
//! from the clone, clone3, fork or vfork that made it, and perf counts that return, with 0 ms, in
//! the new task's table. Summing the tables counted each such call twice (16 clone3 for 8 threads).
//!
//! The fixtures in tests/data are `perf trace -s -o FILE -- PROG` (perf 6.1) of:
//! - `perf_s_threads8.txt`: 8 threads of 1000 getppid each, joined (d3's threads.c);
//! - `perf_s_forks.txt`: 5 fork children making 100 getppid, 5 vfork + exec of /bin/true, 5
//!   posix_spawn of /bin/true (glibc: clone3), each waited for (d3's forks.c);
//! - `perf_s_nested.txt`: 2 threads that each make 2 threads (a thread's table holds its own birth
//!   and its two clone3 calls: `clone3  3  0  0.156  0.000 …`).

use multios_profile::import::{import, ImportOptions};
use std::path::PathBuf;

fn imported(name: &str) -> multios_profile::Profile {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let opts = ImportOptions {
        command: vec![name.into()],
        wall_time_s: Some(1.0),
        strace_wall_clock: None,
    };
    import(&path.to_string_lossy(), &text, &opts).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn count(p: &multios_profile::Profile, name: &str) -> u64 {
    p.syscall(name).map_or(0, |s| s.count)
}

#[test]
fn issue_3_perf_import_counts_each_clone_once() {
    let p = imported("perf_s_threads8.txt");
    assert_eq!(count(&p, "clone3"), 8, "{:?}", p.syscall("clone3"));
    assert_eq!(count(&p, "getppid"), 8000);
    // The parent's calls keep their times and extremes.
    let c = p.syscall("clone3").expect("clone3");
    assert!((c.total_s - 1.281e-3).abs() < 1e-9, "{c:?}");
    let near = |v: Option<f64>, want: f64| v.is_some_and(|v| (v - want).abs() < 1e-12);
    assert!(near(c.min_s, 0.092e-3) && near(c.max_s, 0.224e-3), "{c:?}");

    let p = imported("perf_s_forks.txt");
    assert_eq!(
        (count(&p, "clone"), count(&p, "vfork"), count(&p, "clone3")),
        (5, 5, 5)
    );
    assert_eq!(count(&p, "getppid"), 500);
    assert_eq!(count(&p, "execve"), 11, "the root's and the ten children's");

    let p = imported("perf_s_nested.txt");
    let c = p.syscall("clone3").expect("clone3");
    assert_eq!(c.count, 6, "{c:?}");
    assert!((c.total_s - (0.322 + 0.156 + 0.143) * 1e-3).abs() < 1e-9, "{c:?}");
    assert!(
        near(c.min_s, 0.098e-3),
        "the births' 0.000 is not a call's minimum: {c:?}"
    );
}
