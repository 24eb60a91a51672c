//! issue 18: `multios profile --trace FILE` writes every call of the run as Chrome trace JSON (Trace
//! Event Format), checked field by field: one complete event per call the profile counts, one
//! thread_name event per traced thread.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_multios");

#[test]
fn issue_18_profile_trace_writes_chrome_trace_json() {
    let dir = scratch::Scratch::new("multios-test", "profile-trace");
    let (prof, trace) = (dir.join("p.json"), dir.join("t.json"));
    let o = Command::new(BIN)
        .args([
            "--json",
            "profile",
            "-o",
            prof.to_str().expect("path"),
            "--trace",
            trace.to_str().expect("path"),
        ])
        .args(["--", "sh", "-c", "ls / >/dev/null; cat /etc/hostname >/dev/null"])
        .output()
        .expect("run multios");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let p: serde_json::Value = serde_json::from_slice(&o.stdout).expect("profile");
    assert_eq!(
        p["collection"]["tool"], "multios-ptrace",
        "--trace records with ptrace"
    );
    let calls: u64 = p["syscalls"]
        .as_array()
        .expect("syscalls")
        .iter()
        .map(|s| s["count"].as_u64().expect("n"))
        .sum();
    let threads = p["threads"].as_array().expect("threads");
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).expect("trace")).expect("JSON");
    multios_trace_event::check(&t).unwrap_or_else(|e| panic!("{e}"));
    let ev = t["traceEvents"].as_array().expect("traceEvents");
    assert_eq!(t["displayTimeUnit"], "ns");
    let x: Vec<_> = ev.iter().filter(|e| e["ph"] == "X").collect();
    let m: Vec<_> = ev.iter().filter(|e| e["ph"] == "M").collect();
    assert_eq!(x.len() as u64, calls, "one complete event per counted call");
    assert_eq!(m.len(), threads.len(), "one thread_name per thread");
    assert_eq!(x.len() + m.len(), ev.len());
    let tids: std::collections::BTreeSet<u64> =
        threads.iter().map(|t| t["tid"].as_u64().expect("tid")).collect();
    let mut per_call: std::collections::BTreeMap<String, (u64, f64)> = Default::default();
    for e in &x {
        let mut keys: Vec<&String> = e.as_object().expect("object").keys().collect();
        keys.sort();
        assert_eq!(keys, ["args", "cat", "dur", "name", "ph", "pid", "tid", "ts"]);
        assert_eq!(e["cat"], "syscall");
        assert!(e["ts"].as_f64().is_some_and(|t| t >= 0.0), "{e}");
        let dur = e["dur"].as_f64().expect("dur");
        assert!(dur >= 0.0);
        assert!(tids.contains(&e["tid"].as_u64().expect("tid")), "{e}");
        assert!(e["pid"].as_u64().is_some());
        assert!(e["args"]["nr"].as_u64().is_some() && e["args"]["error"].is_boolean());
        let c = per_call
            .entry(e["name"].as_str().expect("name").to_string())
            .or_default();
        c.0 += 1;
        c.1 += dur * 1e-6;
    }
    // per call, the events add up to the profile's n(s) and g(s)
    for s in p["syscalls"].as_array().expect("syscalls") {
        let (n, g) = per_call[s["name"].as_str().expect("name")];
        assert_eq!(n, s["count"].as_u64().expect("count"), "{s}");
        let want = s["total_s"].as_f64().expect("g");
        assert!(
            (g - want).abs() <= 1e-9 * (1.0 + n as f64),
            "{}: {g} vs {want}",
            s["name"]
        );
    }
    for e in &m {
        assert_eq!(e["name"], "thread_name");
        assert!(e["args"]["name"].as_str().is_some_and(|n| n.contains('/')));
    }
    // eBPF aggregates in the kernel: --trace with it is refused, naming the fix
    let o = Command::new(BIN)
        .args([
            "profile",
            "--backend",
            "ebpf",
            "-o",
            prof.to_str().expect("path"),
            "--trace",
            trace.to_str().expect("path"),
            "--",
            "true",
        ])
        .output()
        .expect("run");
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--backend ptrace"));
}
