//! Issue #15, multi-process programs under the emulator: a child that execs a statically linked
//! program leaves the preload library behind (no dynamic loader reads LD_PRELOAD), so its calls
//! ran natively and were missing from the counts without a word. The report now says so.

use std::process::Command;

fn warnings(script: &str) -> Vec<String> {
    let o = Command::new(env!("CARGO_BIN_EXE_multios"))
        .args([
            "--json",
            "emulate",
            "--policy",
            "mckernel",
            "--fc",
            "0ns",
            "--allow-below-floor",
        ])
        .args(["--", "/bin/sh", "-c", script])
        .output()
        .expect("run multios");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    v["warnings"]
        .as_array()
        .unwrap_or_else(|| panic!("warnings in {v}"))
        .iter()
        .filter_map(|w| w.as_str().map(str::to_string))
        .collect()
}

#[test]
fn issue_15_emulate_names_static_children_it_cannot_follow() {
    let busybox = "/bin/busybox";
    assert!(
        std::fs::read(busybox).is_ok(),
        "{busybox} is needed (apt-get install busybox-static; scripts/deps.sh installs it)"
    );
    let w = warnings(&format!("{busybox} true; {busybox} true > /dev/null"));
    let hit: Vec<&String> = w.iter().filter(|w| w.contains("statically linked")).collect();
    assert_eq!(hit.len(), 1, "one warning: {w:?}");
    assert!(
        hit[0].starts_with("2 execve") && hit[0].contains(busybox),
        "{w:?}"
    );

    // Dynamically linked children are followed: no such warning.
    let w = warnings("/bin/true; ls / > /dev/null");
    assert!(!w.iter().any(|w| w.contains("statically linked")), "{w:?}");
}
