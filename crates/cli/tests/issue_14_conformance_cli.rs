//! Issue #14 through the CLI: `multios lwk conformance --quick` runs two CPython test modules and
//! three stress-ng stressors natively and in the LWK, and its table has the right shape with no
//! unexplained difference; a module that hangs is reported as a timeout with its whole process
//! tree gone. Needs /dev/kvm, Debian's python3.11 + libpython3.11-testsuite and stress-ng
//! (scripts/deps.sh); fails loudly without them.

use std::process::Command;

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
use scratch::Scratch;

fn conformance(args: &[&str]) -> (std::process::ExitStatus, serde_json::Value, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_multios"))
        .args(["lwk", "conformance", "--json"])
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running multios: {e}"));
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let json = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("--json output is not JSON ({e}); stderr: {stderr}"));
    (o.status, json, stderr)
}

fn count(v: &serde_json::Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("no count `{key}` in {v}"))
}

#[test]
fn issue_14_conformance_quick_subset_matches_native() {
    let dir = Scratch::new("issue14-conf", "quick");
    let out = dir.path().to_str().expect("utf-8 temp dir");
    let (status, r, stderr) = conformance(&["--quick", "-o", out]);
    assert_eq!(r["unexplained"], 0, "{r:#}\n{stderr}");
    assert!(status.success(), "{status:?}\n{stderr}");
    let python = r["python"].as_array().expect("python results");
    let modules: Vec<&str> = python.iter().filter_map(|m| m["module"].as_str()).collect();
    assert_eq!(modules, ["test_fcntl", "test_select"]);
    for m in python {
        for side in ["native", "lwk"] {
            let s = &m[side];
            assert_eq!(s["source"], "junit", "{side} {m:#}");
            assert!(count(s, "run") > 0, "{side} ran no test: {m:#}");
            assert_eq!(
                count(s, "passed") + count(s, "failed") + count(s, "skipped"),
                count(s, "run"),
                "{m:#}"
            );
            assert_eq!(count(s, "leftover_files"), 0, "{side} left files: {m:#}");
        }
        assert!(dir
            .path()
            .join(format!("lwk-{}.xml", m["module"].as_str().unwrap_or("")))
            .exists());
    }
    let stress = r["stress"].as_array().expect("stress results");
    let names: Vec<&str> = stress.iter().filter_map(|s| s["stressor"].as_str()).collect();
    assert_eq!(names, ["pipe", "fstat", "yield"]);
    for s in stress {
        for side in ["native", "lwk"] {
            assert_eq!(s[side]["outcome"], "passed", "{s:#}");
            assert_eq!(count(&s[side], "leftover_processes"), 0, "{s:#}");
        }
        assert!(s["difference"].is_null(), "{s:#}");
    }
}

/// test_signal takes tens of seconds; with a 2 s limit both sides time out, are reported so, and
/// nothing they started survives (their command lines name the output directory).
#[test]
fn issue_14_conformance_a_hung_module_is_a_timeout_and_leaves_no_process() {
    let dir = Scratch::new("issue14-conf", "timeout");
    let out = dir.path().to_str().expect("utf-8 temp dir");
    let (_, r, stderr) = conformance(&[
        "--python",
        "test_signal",
        "--stress",
        "none",
        "--module-timeout",
        "2",
        "-o",
        out,
    ]);
    let m = &r["python"][0];
    for side in ["native", "lwk"] {
        let status = m[side]["status"].as_str().unwrap_or_default();
        assert!(status.starts_with("timed out"), "{side}: {m:#}\n{stderr}");
    }
    let left: Vec<String> = std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(out))
        .collect();
    assert!(left.is_empty(), "processes left behind: {left:?}");
}
