//! Issue #11: `multios aam kv` with small bounds and `multios aam trace` print JSON of the
//! documented shape (no timing assertions: the numbers go to `multios aam bench`).

use std::process::Command;

fn multios(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_multios"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run multios: {e}"));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[path = "../../../testsupport/scratch.rs"]
mod scratch;

#[test]
fn issue_11_aam_kv_json_has_both_servers() {
    let (code, stdout, stderr) = multios(&[
        "--json",
        "aam",
        "kv",
        "--requests",
        "200",
        "--connections",
        "2",
        "--duration",
        "30s",
    ]);
    assert_eq!(code, 0, "stderr: {stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    for side in ["machines", "threads"] {
        let s = &v[side];
        assert_eq!(s["server"], side);
        assert_eq!(s["requests"], 200, "{side}: {s}");
        assert_eq!(s["errors"], 0, "{side}: {s}");
        assert_eq!(s["mismatches"], 0, "{side}: {s}");
        for k in ["throughput_rps", "p50_us", "p99_us", "p999_us", "elapsed_s"] {
            assert!(s[k].is_number(), "{side}.{k} missing: {s}");
        }
    }
    for k in ["throughput_ratio", "p99_ratio"] {
        assert!(v[k].is_number(), "{k} missing: {v}");
    }
    assert_eq!(v["load"]["connections"], 2);
    assert!(v["placement"]["os_workers"].is_number());
}

#[test]
fn issue_11_aam_kv_refuses_zero_connections() {
    let (code, _, stderr) = multios(&["aam", "kv", "--connections", "0"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("--connections"), "{stderr}");
}

#[test]
fn issue_11_aam_trace_writes_chrome_trace_json() {
    let dir = scratch::Scratch::new("multios-test", "aam-trace");
    let file = dir.path().join("t.json");
    let f = file.to_string_lossy().into_owned();
    let (code, stdout, stderr) = multios(&["--json", "aam", "trace", "-o", &f, "--calls", "50"]);
    assert_eq!(code, 0, "stderr: {stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(v["calls"], 50);
    assert_eq!(v["machines"], serde_json::json!(["trace-client", "trace-server"]));
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{f}: {e}"));
    let t: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    let events = t["traceEvents"]
        .as_array()
        .unwrap_or_else(|| panic!("no traceEvents: {text}"));
    assert!(
        events
            .iter()
            .any(|e| e["ph"] == "X" && e["name"] == "trace-driver"),
        "no task slice"
    );
    assert!(text.contains("machine trace-server") && text.contains("Echo::echo"));

    // The timeline beside it: PNG, SVG and the CSV of what is drawn, named in the JSON.
    let stem = dir.path().join("t");
    let named = |ext: &str| stem.with_extension(ext).to_string_lossy().into_owned();
    for ext in ["png", "svg", "csv"] {
        assert_eq!(v["timeline"][ext], named(ext), "{v}");
    }
    let png = std::fs::read(named("png")).unwrap_or_else(|e| panic!("png: {e}"));
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let svg = std::fs::read_to_string(named("svg")).unwrap_or_else(|e| panic!("svg: {e}"));
    assert!(
        svg.contains("trace-server · cpu") && svg.contains("task on trace-client"),
        "{svg}"
    );
    let csv = std::fs::read_to_string(named("csv")).unwrap_or_else(|e| panic!("csv: {e}"));
    assert!(csv.starts_with("lane,kind,group,start,end\n"), "{csv}");
    assert!(csv.contains(",bar,task on trace-server,"), "{csv}");
    // With two CPUs the server's CPU is moved to the client and back: marks and no-core spells.
    if std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2 {
        assert!(
            csv.contains(",mark,core move,") && csv.contains(",thin,no core,"),
            "{csv}"
        );
    }
}
