//! Issue #14, part B.2, end to end: `multios lwk run --reserve` and `multios bench reserve`.
//! The run prints what it reserved and gives it back; the bench (one short round) measures FWQ
//! unreserved and reserved and the compute loop four ways, and its JSON has every field. Needs
//! root, /dev/kvm, two CPUs and a cpuset hierarchy: FAILS (never skips) without. Takes ≈ 6 s.

use std::process::Command;

const MULTIOS: &str = env!("CARGO_BIN_EXE_multios");

fn reservations() -> Vec<String> {
    let mounts = std::fs::read_to_string("/proc/mounts").expect("/proc/mounts");
    let mut v = Vec::new();
    for l in mounts.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() > 2 && (f[2] == "cgroup" || f[2] == "cgroup2") {
            for e in std::fs::read_dir(f[1]).into_iter().flatten().flatten() {
                let n = e.file_name().to_string_lossy().into_owned();
                if n.starts_with("multios-lwk-reserve-") {
                    v.push(n);
                }
            }
        }
    }
    v
}

#[test]
fn issue_14_lwk_run_reserve_and_bench_reserve() {
    assert!(
        std::path::Path::new("/dev/kvm").exists(),
        "/dev/kvm is missing: the LWK tests need KVM"
    );
    let out = Command::new(MULTIOS)
        .args(["lwk", "run", "--reserve", "--mem-mib", "64", "--", "/bin/true"])
        .output()
        .expect("multios");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("reserved") && err.contains("locked and pre-faulted"),
        "{err}"
    );
    assert!(reservations().is_empty(), "{:?}", reservations());
    let out = Command::new(MULTIOS)
        .args([
            "bench",
            "reserve",
            "--rounds",
            "1",
            "--fwq-seconds",
            "0.2",
            "--compute-iters",
            "10000000",
            "--json",
        ])
        .output()
        .expect("multios");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(v["fwq"].as_array().map(Vec::len), Some(2), "{text}");
    assert_eq!(v["fwq_rows"].as_array().map(Vec::len), Some(4), "{text}");
    let round = &v["compute"][0];
    for k in ["native_s", "native_reserved_s", "lwk_s", "reserved_s"] {
        assert!(round[k].as_f64().is_some_and(|t| t > 0.0), "{k}: {text}");
    }
    assert!(
        v["reservation"].as_str().is_some_and(|r| r.contains("reserved")),
        "{text}"
    );
    assert!(reservations().is_empty(), "{:?}", reservations());
}
