//! issue 18: mktrace (the paper's emulator, github.com/HExSA-Lab/mktrace) writes no trace or profile;
//! its one file format is the `mktrace_pf` profile: the calls to delegate, one kernel name per line.
//! `--policy list:FILE` reads it as it is, so a study's mktrace_pf projects unchanged.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;

use std::process::Command;

#[test]
fn issue_18_an_mktrace_pf_file_is_a_policy() {
    let dir = scratch::Scratch::new("multios-test", "mktrace-pf");
    let pf = dir.join("mktrace_pf");
    // mktrace's own example profile (mktrace_pf.example)
    std::fs::write(&pf, "brk\nchdir\nwrite\n").expect("write");
    let profile = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/bzip2/profile.json");
    let o = Command::new(env!("CARGO_BIN_EXE_multios"))
        .args(["--json", "model", "refined", "--profile", profile, "--fc", "10us"])
        .arg(format!("--policy=list:{}", pf.display()))
        .output()
        .expect("run");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let mut delegated: Vec<&str> = v["breakdown"]
        .as_array()
        .expect("breakdown")
        .iter()
        .filter(|b| b["delegated"] == true)
        .map(|b| b["name"].as_str().expect("name"))
        .collect();
    delegated.sort();
    // the bundled bzip2 run made no chdir: brk and write are delegated, nothing else
    assert_eq!(delegated, ["brk", "write"]);
}
