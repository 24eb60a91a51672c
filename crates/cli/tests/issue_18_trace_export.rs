//! issue 18: `perf trace` records import into a profile, and `--trace` exports them as Chrome trace
//! JSON that follows the Trace Event Format field by field, one complete event per timed call.
//! Needs `perf` (Debian's linux-perf, installed by scripts/deps.sh) and root, as the profiler's tests.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_multios");

#[test]
fn issue_18_perf_trace_records_import_and_export_as_chrome_trace() {
    let dir = scratch::Scratch::new("multios-test", "chrome-trace");
    let rec = dir.join("perf-trace.txt");
    let o = Command::new("perf")
        .args([
            "trace",
            "-o",
            rec.to_str().expect("path"),
            "--",
            "sh",
            "-c",
            "ls / >/dev/null; cat /etc/hostname >/dev/null",
        ])
        .output()
        .unwrap_or_else(|e| panic!("perf: {e} — install linux-perf (scripts/deps.sh)"));
    assert!(
        o.status.success(),
        "perf trace: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = std::fs::read_to_string(&rec).expect("records");
    // timed calls: "  0.052 ( 0.007 ms): comm/tid name(…)"
    let timed = text
        .lines()
        .filter(|l| l.contains(" ms): ") && l.trim_start().as_bytes()[0].is_ascii_digit())
        .count();
    assert!(timed > 20, "too few records:\n{text}");

    let prof = dir.join("p.json");
    let trace = dir.join("trace.json");
    let o = Command::new(BIN)
        .args([
            "--json",
            "profile",
            "import",
            rec.to_str().expect("path"),
            "-o",
            prof.to_str().expect("path"),
        ])
        .args(["--trace", trace.to_str().expect("path"), "--command", "sh -c …"])
        .output()
        .expect("multios");
    assert!(
        o.status.success(),
        "import: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let p: serde_json::Value = serde_json::from_slice(&o.stdout).expect("profile json");
    let n: u64 = p["syscalls"]
        .as_array()
        .expect("syscalls")
        .iter()
        .map(|s| s["count"].as_u64().expect("count"))
        .sum();
    assert_eq!(n as usize, timed);
    assert_eq!(p["collection"]["tool"], "perf trace");
    assert!(
        p["threads"].as_array().expect("threads").len() >= 2,
        "sh and its children"
    );

    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).expect("trace")).expect("JSON");
    let mut top: Vec<&String> = t.as_object().expect("an object").keys().collect();
    top.sort();
    assert_eq!(top, ["displayTimeUnit", "traceEvents"]);
    assert_eq!(t["displayTimeUnit"], "ns");
    let ev = t["traceEvents"].as_array().expect("traceEvents");
    let x: Vec<_> = ev.iter().filter(|e| e["ph"] == "X").collect();
    let m: Vec<_> = ev.iter().filter(|e| e["ph"] == "M").collect();
    assert_eq!(x.len(), timed, "one complete event per timed call");
    assert_eq!(x.len() + m.len(), ev.len(), "only X and M events");
    assert_eq!(
        m.len(),
        p["threads"].as_array().expect("threads").len(),
        "one thread_name per thread"
    );
    for e in &x {
        let mut keys: Vec<&String> = e.as_object().expect("event object").keys().collect();
        keys.sort();
        assert_eq!(keys, ["args", "cat", "dur", "name", "ph", "pid", "tid", "ts"]);
        assert!(e["name"].as_str().is_some_and(|n| !n.is_empty()));
        assert_eq!(e["cat"], "syscall");
        assert!(e["ts"].as_f64().is_some_and(|t| t >= 0.0), "{e}");
        assert!(e["dur"].as_f64().is_some_and(|d| d >= 0.0), "{e}");
        assert!(e["pid"].as_u64().is_some() && e["tid"].as_u64().is_some());
        assert!(e["args"]["nr"].as_u64().is_some() && e["args"]["error"].is_boolean());
    }
    for e in &m {
        assert_eq!(e["name"], "thread_name");
        assert!(e["args"]["name"].as_str().is_some());
    }
    // a summary still needs --wall (it does not record the run's wall time), and --trace needs records
    let summary = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/bzip2/strace-c-w-f.txt"
    );
    let o = Command::new(BIN)
        .args(["profile", "import", summary, "-o", prof.to_str().expect("path")])
        .output()
        .expect("multios");
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("--wall"));
    let o = Command::new(BIN)
        .args([
            "profile",
            "import",
            summary,
            "--wall",
            "3s",
            "-o",
            prof.to_str().expect("path"),
        ])
        .args(["--trace", trace.to_str().expect("path")])
        .output()
        .expect("multios");
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("no per-call records"));
}
