//! issue 18: one Trace Event Format writer (`multios-trace-event`) behind both Chrome traces
//! multios writes — `multios profile --trace` (every system call) and `multios aam trace` (the AAM
//! timeline) — and both files pass the same field-by-field check (`multios_trace_event::check`).

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
fn issue_18_profile_and_aam_traces_follow_the_trace_event_format() {
    let dir = scratch::Scratch::new("multios-test", "trace-event-format");
    let (prof, trace) = (dir.join("p.json"), dir.join("t.json"));
    let p = run(&[
        "--json",
        "profile",
        "-o",
        prof.to_str().expect("path"),
        "--trace",
        trace.to_str().expect("path"),
        "--",
        "sh",
        "-c",
        "ls / >/dev/null; cat /etc/hostname >/dev/null",
    ]);
    let c = multios_trace_event::check(&read(&trace)).unwrap_or_else(|e| panic!("profile trace: {e}"));
    let calls: u64 = p["syscalls"]
        .as_array()
        .expect("syscalls")
        .iter()
        .map(|s| s["count"].as_u64().expect("n"))
        .sum();
    assert_eq!(c.complete as u64, calls, "one complete event per counted call");
    assert_eq!(
        (c.instant, c.metadata),
        (0, p["threads"].as_array().expect("threads").len())
    );
    assert_eq!(c.named_threads, c.threads, "every thread with calls is named");

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
