//! issue 18: one Trace Event Format writer (`multios-trace-event`) behind both Chrome traces
//! multios writes — `multios profile --trace` (every system call) and `multios aam trace` (the AAM
//! timeline) — and both files pass the same field-by-field check (`multios_trace_event::check`):
//! the AAM timeline here, the profile trace in issue_18_profile_trace.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_multios");

fn run(args: &[&str]) -> serde_json::Value {
    let o = Command::new(BIN).args(args).output().expect("run multios");
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("--json output")
}

fn read(p: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).expect("trace")).expect("JSON")
}

#[test]
fn issue_18_aam_trace_follows_the_trace_event_format() {
    // `multios profile --trace` goes through the same check in issue_18_profile_trace.
    let dir = scratch::Scratch::new("multios-test", "trace-event-format");
    let aam = dir.join("aam.json");
    run(&[
        "--json",
        "aam",
        "trace",
        "-o",
        aam.to_str().expect("path"),
        "--calls",
        "50",
    ]);
    let c = multios_trace_event::check(&read(&aam)).unwrap_or_else(|e| panic!("aam trace: {e}"));
    assert!(
        c.by_name.get("trace-driver").is_some_and(|n| *n >= 1),
        "{:?}",
        c.by_name
    );
    assert!(
        c.by_name.get("Echo::echo").is_some_and(|n| *n >= 1),
        "{:?}",
        c.by_name
    );
    // two machines named (process_name) and every worker with events named (thread_name)
    assert!(c.metadata >= 2 + c.threads.len(), "{c:?}");
    assert!(c.threads.is_subset(&c.named_threads), "{c:?}");
}
