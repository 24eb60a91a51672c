//! Issue #11: `multios model aam` answers "should this workload's calls go to the OS machine?"
//! from a profile: the JSON shape, the verdict on both sides of the break-even cost, a measured
//! f_c, and clear errors without --profile or a call cost (no timing assertions).

use std::path::PathBuf;

mod common;
use common::multios;

fn profile() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/bzip2/profile.json")
        .display()
        .to_string()
}

fn json(args: &[&str]) -> serde_json::Value {
    let (code, stdout, stderr) = multios(args);
    assert_eq!(code, 0, "stderr: {stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn issue_11_model_aam_json_shape_and_verdict() {
    let p = profile();
    let v = json(&[
        "--json",
        "model",
        "aam",
        "--profile",
        &p,
        "--call-cost",
        "250ns",
        "--gamma",
        "2",
    ]);
    assert_eq!(v["fc_source"], "given");
    assert!(v["measured"].is_null());
    assert_eq!(v["gamma"], 2.0);
    assert!(
        (v["fc_s"].as_f64().unwrap_or(f64::NAN) - 250e-9).abs() < 1e-15,
        "{v}"
    );
    for k in ["speedup", "break_even_fc_s"] {
        assert!(v[k].is_number(), "{k} missing: {v}");
    }
    assert_eq!(v["pays"], true, "{v}");
    assert_eq!(v["verdict"], "pays");
    let pr = &v["projection"];
    for k in ["t_nd", "t_d", "c", "sum_g", "forwarding", "speedup"] {
        assert!(pr[k].is_number(), "projection.{k} missing: {pr}");
    }
    assert_eq!(
        pr["delegated_calls"], pr["total_calls"],
        "every call goes to the OS machine"
    );
    assert_eq!(pr["speedup"], v["speedup"]);

    // Above the break-even cost the same workload does not pay.
    let be = v["break_even_fc_s"].as_f64().unwrap_or(f64::NAN);
    let above = format!("{}ns", (be * 1e9 * 2.0).ceil());
    let w = json(&[
        "--json",
        "model",
        "aam",
        "--profile",
        &p,
        "--call-cost",
        &above,
        "--gamma",
        "2",
    ]);
    assert_eq!(w["pays"], false, "{w}");
    assert_eq!(w["verdict"], "does not pay");
}

#[test]
fn issue_11_model_aam_measures_the_call_cost() {
    let p = profile();
    let v = json(&[
        "--json",
        "model",
        "aam",
        "--profile",
        &p,
        "--measure",
        "--iterations",
        "300",
    ]);
    assert_eq!(v["fc_source"], "measured");
    let m = &v["measured"];
    assert_eq!(m["iterations"], 300);
    for k in ["median_ns", "mean_ns", "client_cpu", "server_cpu"] {
        assert!(m[k].is_number(), "measured.{k} missing: {m}");
    }
    assert!(v["fc_s"].as_f64().unwrap_or(0.0) > 0.0, "{v}");
}

#[test]
fn issue_11_model_aam_csv_has_one_row() {
    let p = profile();
    let (code, stdout, stderr) = multios(&["--csv", "model", "aam", "--profile", &p, "--call-cost", "1us"]);
    assert_eq!(code, 0, "stderr: {stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(lines[0].starts_with("profile,fc_s,fc_source,gamma"), "{stdout}");
    assert!(
        lines[1].ends_with(",does not pay") || lines[1].ends_with(",pays"),
        "{stdout}"
    );
}

#[test]
fn issue_11_model_aam_without_profile_is_a_clear_error() {
    let (code, stdout, stderr) = multios(&["model", "aam", "--call-cost", "1us"]);
    assert_ne!(code, 0);
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains("--profile"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");

    let p = profile();
    let (code, _, stderr) = multios(&["model", "aam", "--profile", &p]);
    assert_ne!(code, 0);
    assert!(
        stderr.contains("--call-cost") && stderr.contains("--measure"),
        "{stderr}"
    );
}
