//! Issue #13: forwarded-event traces (`lwk run --trace`). A real program's delegated calls are
//! all in the trace, counted exactly, and the ranking names the function that made them; a forked
//! child writes its own trace. Needs /dev/kvm and gcc.

use multios_lwk::trace::{child_path, hotspots, Kind, Trace};
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
use scratch::Scratch;

const RUNNER: &str = env!("CARGO_BIN_EXE_lwk-run");

fn build(dir: &Scratch) -> PathBuf {
    if let Err(e) = multios_lwk::check_kvm() {
        panic!("issue #13 tests need KVM and it is not usable here: {e}");
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/traced.c");
    let out = dir.path().join("traced");
    let o = Command::new("gcc")
        .args(["-O1", "-g", "-o"])
        .arg(&out)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("running gcc (apt-get install gcc libc6-dev): {e}"));
    assert!(o.status.success(), "gcc: {}", String::from_utf8_lossy(&o.stderr));
    out
}

#[test]
fn issue_13_trace_counts_every_forwarded_call_and_names_its_caller() {
    let dir = Scratch::new("multios-issue-13", "trace");
    let prog = build(&dir);
    let trace = dir.path().join("run.trace");
    let (n, m) = (40, 7);
    let o = Command::new(RUNNER)
        .arg(&prog)
        .args([n.to_string(), m.to_string()])
        .env("LWK_TRACE", &trace)
        .output()
        .expect("lwk-run");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains(&format!("missing {m}")), "{stdout}");

    let t = Trace::load(&trace).expect("the parent's trace reads back");
    assert!(!t.maps.is_empty(), "the trace ends with the guest's map");
    let count = |name: &str| {
        t.events
            .iter()
            .filter(|e| e.kind == Kind::Call && e.name == name)
            .count()
    };
    // emit_lines(n) and the printf: n + 1 writes in the parent (the loader's stats are traced
    // too, so probe_files' are counted by their caller below).
    assert_eq!(count("write"), n + 1, "writes traced");
    let h = hotspots(&t, 0);
    let row = |name: &str| h.rows.iter().find(|r| r.name == name && r.count > 1).cloned();
    let w = row("write").expect("a write row");
    assert_eq!(w.count, n as u64);
    assert!(w.caller.starts_with("emit_lines"), "write's caller: {w:?}");
    let s = h
        .rows
        .iter()
        .find(|r| r.name == "newfstatat" && r.caller.starts_with("probe_files"))
        .unwrap_or_else(|| panic!("no newfstatat row names probe_files: {:?}", h.rows));
    assert_eq!(s.count, m as u64, "stats of probe_files traced");

    // The child's trace: FILE.PID, naming its parent, with its one write.
    let child = std::fs::read_dir(dir.path())
        .expect("scratch dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p != &trace && p.to_string_lossy().starts_with(&*trace.to_string_lossy()))
        .expect("the forked child's trace");
    let c = Trace::load(&child).expect("the child's trace reads back");
    assert_eq!(child, child_path(&trace, c.header.pid));
    assert_eq!(c.header.parent, Some(t.header.pid));
    assert_eq!(c.events.iter().filter(|e| e.name == "write").count(), 1);
}
