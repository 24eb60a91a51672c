//! Issue #11: `multios aam kv` with small bounds and `multios aam trace` print JSON of the
//! documented shape (no timing assertions: the numbers go to `multios aam bench`).

mod common;
use common::multios;

#[path = "../../../testsupport/scratch.rs"]
mod scratch;

#[test]
fn issue_11_aam_kv_json_has_the_three_servers() {
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
    for side in ["machines", "threads", "tokio"] {
        let s = &v[side];
        assert_eq!(s["server"], side);
        assert_eq!(s["requests"], 200, "{side}: {s}");
        assert_eq!(s["errors"], 0, "{side}: {s}");
        assert_eq!(s["mismatches"], 0, "{side}: {s}");
        for k in ["throughput_rps", "p50_us", "p99_us", "p999_us", "elapsed_s"] {
            assert!(s[k].is_number(), "{side}.{k} missing: {s}");
        }
    }
    for k in [
        "throughput_ratio",
        "p99_ratio",
        "throughput_vs_tokio",
        "p99_vs_tokio",
    ] {
        assert!(v[k].is_number(), "{k} missing: {v}");
    }
    assert!(v["storage"].as_str().is_some_and(|s| s.contains("WAL")), "{v}");
    assert_eq!(v["load"]["connections"], 2);
    assert!(v["placement"]["os_workers"].is_number());
    // The machine server under its three layouts; the manager's moves by cause. Compression
    // starts without a core under the utilization policy: the first PUT needs a move.
    let layouts = v["layouts"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = layouts
        .iter()
        .filter_map(|l| l["report"]["server"].as_str())
        .collect();
    assert_eq!(
        names,
        ["machines", "machines-static-spread", "machines-utilization"],
        "{v}"
    );
    for l in &layouts {
        assert_eq!(l["report"]["requests"], 200, "{l}");
        assert_eq!(l["report"]["errors"], 0, "{l}");
        assert_eq!(l["report"]["mismatches"], 0, "{l}");
        assert!(l["throughput_vs_shared"].is_number() && l["p99_vs_shared"].is_number());
    }
    assert_eq!(layouts[0]["stats"]["moves"]["policy"], 0);
    let moves = &layouts[2]["stats"]["moves"];
    let total: u64 = ["ims", "idle", "policy", "explicit"]
        .iter()
        .map(|k| moves[*k].as_u64().unwrap_or(0))
        .sum();
    assert!(total >= 1, "{moves}");
    assert_eq!(v["load"]["mix"]["phased"]["large_bytes"], 16384, "{v}");
}

/// One `multios aam bench` run carries every part the issue lists (small sizes; no timing is
/// judged here: the verdicts are printed, whatever they say).
#[test]
fn issue_11_aam_bench_json_has_every_part() {
    let (code, stdout, stderr) = multios(&[
        "--json",
        "aam",
        "bench",
        "--iterations",
        "200",
        "--runs",
        "2",
        "--kv-requests",
        "100",
    ]);
    assert_eq!(code, 0, "stderr: {stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let names: Vec<&str> = v["report"]["results"]
        .as_array()
        .map(|a| a.iter().filter_map(|r| r["name"].as_str()).collect())
        .unwrap_or_default();
    for n in [
        "aam_local_task_total",
        "aam_call_active_total",
        "aam_call_idle_total",
        "aam_core_move",
        "cache_line_round_trip",
        "futex_wake_reply_round_trip",
        "gettid",
        "thread_context_switch",
        "thread_create_join",
        "tokio_current_thread_spawn_await",
        "tokio_multi_thread_remote_spawn",
        "crossbeam_channel_round_trip",
        "aam_call_active_pread64_shaped_total",
    ] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    let runs = v["active_runs"].as_array().map_or(0, Vec::len);
    assert_eq!(runs, 2, "{}", v["active_runs"]);
    assert!(v["active_runs"][0]["ratio"].is_number());
    for side in ["machines", "threads", "tokio"] {
        assert_eq!(v["kv"][side]["requests"], 100, "{side}");
        assert_eq!(v["kv"][side]["mismatches"], 0, "{side}");
    }
    let val = &v["validation"];
    for k in [
        "error_pct",
        "error_plain_pct",
        "error_gamma_pct",
        "fc_s",
        "measured_os_machine_s",
    ] {
        assert!(val[k].is_number(), "validation.{k} missing: {val}");
    }
    for k in [
        "gamma",
        "share",
        "co_run",
        "stall_ns",
        "wait_mean_ns",
        "wait_median_ns",
    ] {
        assert!(val["beside"][k].is_number(), "beside.{k} missing: {val}");
    }
    // The verdict's projection: γ and the stall per call (the `wakeup` term); `share` is a
    // diagnostic beside it.
    assert!(val["terms"]["wakeup_s"].is_number(), "{val}");
    assert!(val["error_share_pct"].is_number(), "{val}");
    let goals: Vec<&str> = v["verdicts"]
        .as_array()
        .map(|a| a.iter().filter_map(|g| g["goal"].as_str()).collect())
        .unwrap_or_default();
    // Six of Table 1, three of the manager's activation, three of the key-value service (the
    // three servers, then the spread and utilization layouts against the shared one), the model.
    assert_eq!(goals.len(), 13, "{goals:?}");
    for n in [
        "aam_call_coreless_total",
        "aam_call_behind_busy_worker",
        "aam_call_behind_busy_worker_no_sibling_wake",
    ] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    assert_eq!(v["kv"]["layouts"].as_array().map_or(0, Vec::len), 3);
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

/// `aam trace --kv`: the key-value service's machines under the utilization policy, with the
/// core moves in the JSON, the Chrome trace and the drawn timeline.
#[test]
fn issue_11_aam_trace_kv_shows_core_moves() {
    let dir = scratch::Scratch::new("multios-test", "aam-trace-kv");
    let file = dir.path().join("kv.json");
    let f = file.to_string_lossy().into_owned();
    let (code, stdout, stderr) = multios(&[
        "--json",
        "aam",
        "trace",
        "--kv",
        "--requests",
        "60",
        "--connections",
        "2",
        "-o",
        &f,
    ]);
    assert_eq!(code, 0, "stderr: {stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(v["calls"], 60);
    assert_eq!(
        v["machines"],
        serde_json::json!(["kv-net", "kv-storage", "kv-compression"])
    );
    let total: u64 = ["ims", "idle", "policy", "explicit"]
        .iter()
        .map(|k| v["moves"][*k].as_u64().unwrap_or(0))
        .sum();
    assert!(total >= 1, "{v}");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{f}: {e}"));
    assert!(text.contains("core gained") && text.contains("machine kv-compression"));
    let csv = std::fs::read_to_string(dir.path().join("kv.csv")).unwrap_or_else(|e| panic!("csv: {e}"));
    assert!(
        csv.contains(",mark,core move,") && csv.contains("kv-compression · cpu"),
        "{csv}"
    );
}
