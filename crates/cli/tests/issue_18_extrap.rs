//! issue 18: `multios report extrap` turns merged per-rank profiles into Extra-P's text input.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_multios");

fn multios(args: &[&str]) -> String {
    let o = Command::new(BIN).args(args).output().expect("run multios");
    assert!(
        o.status.success(),
        "multios {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("utf-8")
}

#[test]
fn issue_18_extrap_input_from_merged_rank_profiles() {
    let dir = scratch::Scratch::new("multios-test", "extrap");
    let p = |name: &str| dir.join(name).display().to_string();
    for r in 0..3 {
        multios(&[
            "profile",
            "-o",
            &p(&format!("prof.{r}.json")),
            "--",
            "sh",
            "-c",
            "ls / >/dev/null",
        ]);
    }
    multios(&["profile", "merge", "-o", &p("one.json"), &p("prof.0.json")]);
    multios(&[
        "profile",
        "merge",
        "-o",
        &p("three.json"),
        &p("prof.0.json"),
        &p("prof.1.json"),
        &p("prof.2.json"),
    ]);
    multios(&[
        "report",
        "extrap",
        "-o",
        &p("extrap.txt"),
        &p("three.json"),
        &p("one.json"),
    ]);
    let text = std::fs::read_to_string(dir.join("extrap.txt")).expect("extrap.txt");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[..3], ["PARAMETER p", "POINTS 1 3", "REGION syscalls"]);
    let merged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("three.json")).expect("three")).expect("json");
    let walls: Vec<f64> = merged["ranks"]
        .as_array()
        .expect("ranks")
        .iter()
        .map(|r| r["wall_time_s"].as_f64().expect("wall"))
        .collect();
    // METRIC time: DATA at p = 1, then at p = 3 the three ranks' wall times
    assert_eq!(lines[3], "METRIC time");
    let at3: Vec<f64> = lines[5]
        .strip_prefix("DATA ")
        .expect("DATA")
        .split(' ')
        .map(|v| v.parse().expect("number"))
        .collect();
    assert_eq!(at3, walls);
    assert_eq!(lines.iter().filter(|l| l.starts_with("DATA ")).count(), 3 * 2);
    // a single profile without ranks is refused, naming it
    let o = Command::new(BIN)
        .args(["report", "extrap", "-o", &p("x.txt"), &p("prof.0.json")])
        .output()
        .expect("run");
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("prof.0.json"));
}
