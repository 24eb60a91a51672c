//! Issue #2: the foundation's CLI — the paper's numbers reproduce and bad input gets a one-line error
//! that names the field and the fix.

mod common;
use common::multios;

fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[path = "../../../testsupport/scratch.rs"]
mod scratch;

/// A scratch directory, removed at the end of the test.
fn tmp(name: &str) -> scratch::Scratch {
    scratch::Scratch::new("multios-test", name)
}

fn err_line(args: &[&str]) -> String {
    let (code, _, err) = multios(args);
    assert_ne!(code, 0, "{args:?} should fail");
    let line = err.trim().to_string();
    assert_eq!(line.lines().count(), 1, "error should be one line: {line}");
    line
}

#[test]
fn issue_2_table1_reproduces_figure3() {
    let (code, out, err) = multios(&["--json", "model", "naive", "--paper-table1", "--gamma", "2,10"]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap_or_default();
    let get = |name: &str, col: &str| {
        rows.iter()
            .find(|r| r["workload"] == name)
            .and_then(|r| r[col].as_f64())
            .unwrap_or(f64::NAN)
    };
    assert!((get("gcc_linux_k", "S_n(γ=10)") - 2.4070).abs() < 1e-4);
    assert!((get("bzip2", "S_n(γ=10)") - 7.4817).abs() < 1e-4);
    assert!((get("bzip2", "S_n(γ=2)") - 1.9279).abs() < 1e-4);
    assert!(get("BT", "S_n(γ=10)") > 9.9999);
    assert_eq!(rows.len(), 8);
}

#[test]
fn issue_2_multiverse_estimate_from_refined_model() {
    let (code, out, err) = multios(&[
        "--json",
        "model",
        "refined",
        "--compute",
        "23.8s",
        "--syscall",
        "mmap:75252:0s",
        "--fc",
        "750cycles@2.2GHz",
        "--gamma",
        "1",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
    let f = v["forwarding"].as_f64().unwrap_or(f64::NAN);
    assert!((f - 0.051_31).abs() < 0.000_05, "Σf = {f}");
    assert!((f * 2.2e9 / 1e6 - 112.9).abs() < 0.1);
}

#[test]
fn issue_2_bad_input_names_field_and_fix() {
    assert!(err_line(&["model", "naive", "--p", "1.5"]).contains("p = 1.5 is outside [0, 1]"));
    assert!(err_line(&["model", "naive", "--p", "0.1", "--gamma", "0"]).contains("γ (gamma) = 0 must be > 0"));
    let e = err_line(&["model", "refined", "--syscall", "read:10:5", "--fc", "1us"]);
    assert!(e.contains("has no unit") && e.contains("5us"), "{e}");
    let e = err_line(&["model", "refined", "--syscall", "read:10:5us", "--fc=-1us"]);
    assert!(e.contains("negative"), "{e}");
    let e = err_line(&["model", "refined", "--syscall", "wirte:10:5us"]);
    assert!(
        e.contains("unknown system call 'wirte' (did you mean 'write'?)"),
        "{e}"
    );
    let e = err_line(&[
        "model",
        "refined",
        "--syscall",
        "read:10:5us",
        "--policy",
        "least:1.2",
    ]);
    assert!(e.contains("fraction = 1.2 is outside [0, 1]"), "{e}");
    let e = err_line(&[
        "model",
        "refined",
        "--syscall",
        "read:10:5us",
        "--policy",
        "mckernal",
    ]);
    assert!(e.contains("unknown policy 'mckernal'"), "{e}");
}

#[test]
fn issue_2_profile_errors_name_file_line_field() {
    let dir = tmp("schema");
    let good = std::fs::read_to_string(root().join("examples/bzip2/profile.json")).unwrap_or_default();
    let newer = dir.join("newer.json");
    let _ = std::fs::write(
        &newer,
        good.replacen("\"schema_version\": 1", "\"schema_version\": 8", 1),
    );
    let e = err_line(&[
        "model",
        "refined",
        "--profile",
        newer.to_str().unwrap_or_default(),
    ]);
    assert!(
        e.contains("newer.json: schema_version 8 is newer than this multios reads (up to 7)"),
        "{e}"
    );
    let bad = dir.join("bad.json");
    let _ = std::fs::write(&bad, good.replacen("\"count\": 8195", "\"count\": \"many\"", 1));
    let e = err_line(&["model", "refined", "--profile", bad.to_str().unwrap_or_default()]);
    assert!(e.contains("bad.json:") && e.contains("syscalls[0].count"), "{e}");
}

#[test]
fn issue_2_import_strace_and_run_every_command_on_it() {
    let dir = tmp("import");
    let prof = dir.join("p.json");
    let prof_s = prof.to_str().unwrap_or_default();
    let src = root().join("examples/bzip2/strace-c-w-f.txt");
    let (code, _, err) = multios(&[
        "profile",
        "import",
        src.to_str().unwrap_or_default(),
        "--wall",
        "3.02s",
        "--strace-wall-clock",
        "-o",
        prof_s,
    ]);
    assert_eq!(code, 0, "{err}");
    for args in [
        vec!["model", "naive", "--profile", prof_s],
        vec![
            "model",
            "refined",
            "--profile",
            prof_s,
            "--policy",
            "mckernel",
            "--fc",
            "3.14us",
            "--gamma",
            "1.04",
        ],
        vec![
            "model",
            "queue",
            "--profile",
            prof_s,
            "--policy",
            "all",
            "--servers",
            "2",
        ],
        vec![
            "model",
            "sweep",
            "--profile",
            prof_s,
            "--over",
            "fc",
            "--from",
            "1ns",
            "--to",
            "1s",
            "--steps",
            "5",
        ],
        vec![
            "model",
            "fit",
            "--profile",
            prof_s,
            "--fc",
            "3.14us",
            "--measured",
            "0.98",
            "--gammas",
            "1,0.99,1.02",
        ],
        vec![
            "model",
            "advise",
            "--profile",
            prof_s,
            "--fc",
            "10us",
            "--gamma",
            "2",
            "--budget",
            "2",
        ],
    ] {
        for fmt in [None, Some("--json"), Some("--csv")] {
            let mut a: Vec<&str> = fmt.into_iter().collect();
            a.extend(&args);
            let (code, out, err) = multios(&a);
            assert_eq!(code, 0, "{a:?}: {err}");
            assert!(!out.trim().is_empty(), "{a:?} printed nothing");
            if fmt == Some("--json") {
                assert!(
                    serde_json::from_str::<serde_json::Value>(&out).is_ok(),
                    "{a:?}: not JSON: {out}"
                );
            }
        }
    }
    let (code, out, _) = multios(&[
        "--json",
        "model",
        "advise",
        "--profile",
        prof_s,
        "--fc",
        "10us",
        "--budget",
        "1",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
    assert_eq!(
        v["port"][0]["name"], "read",
        "the advisor should port read first for bzip2"
    );
}

#[test]
fn issue_2_unstable_queue_is_reported_not_a_number() {
    let e = err_line(&["model", "queue", "--lambda", "600,600", "--mu", "1000"]);
    assert!(e.contains("queue is unstable") && e.contains("--servers"), "{e}");
    let (code, out, _) = multios(&[
        "--json",
        "model",
        "queue",
        "--lambda",
        "600,600",
        "--mu",
        "1000",
        "--servers",
        "2",
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("\"wait\""));
}

#[test]
fn issue_2_plots_write_png_svg_csv() {
    let dir = tmp("plots");
    let prof = root().join("examples/bzip2/profile.json");
    let (code, _, err) = multios(&[
        "plot",
        "all",
        "--profile",
        prof.to_str().unwrap_or_default(),
        "--out",
        dir.to_str().unwrap_or_default(),
    ]);
    assert_eq!(code, 0, "{err}");
    for stem in [
        "fig2-naive-p-gamma",
        "fig3-naive-vs-gamma",
        "fig4-policies-vs-gamma",
        "fig5-gamma-fc-bzip2",
        "fig6-syscall-cdf",
        "fig7-fc-fraction-bzip2",
        "fig8-gamma-fraction-bzip2",
        "fig9-policies-vs-fc",
    ] {
        for ext in ["png", "svg", "csv"] {
            let f = dir.join(format!("{stem}.{ext}"));
            let len = std::fs::metadata(&f).map(|m| m.len()).unwrap_or(0);
            assert!(len > 100, "{} missing or tiny", f.display());
        }
    }
}

/// The README's main job: live profile (eBPF as root) → projection → emulation → plots.
#[test]
fn issue_2_demo_runs_end_to_end() {
    let dir = tmp("demo");
    let (code, out, err) = multios(&[
        "--json",
        "demo",
        "--out",
        dir.to_str().unwrap_or_default(),
        "--mib",
        "4",
        "--rounds",
        "1",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
    assert!(
        v["profile"].as_str().is_some_and(|s| s.starts_with("live")),
        "not profiled live: {}",
        v["notes"]
    );
    assert_eq!(
        v["emulation"].as_array().map(Vec::len),
        Some(2),
        "emulation missing: {}",
        v["notes"]
    );
    assert!(v["projections"].as_array().is_some_and(|p| p.len() == 36));
    assert_eq!(v["plots"].as_array().map(Vec::len), Some(5));
    for f in ["profile.json", "projection.csv", "fig6-syscall-cdf.png"] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    let p = std::fs::read_to_string(dir.join("profile.json")).unwrap_or_default();
    assert!(
        p.contains("\"tool\": \"multios-ebpf\""),
        "the demo should profile with eBPF as root"
    );
}
