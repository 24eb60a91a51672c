//! `--results FILE`: multios's own output (table, `--json`, `--csv`) goes to the file and stdout
//! carries only the program's, so `multios --json emulate … -- prog > prog.out` leaves both
//! readable. Before, the JSON followed the program's output on stdout and did not parse. Needs
//! root (the eBPF profiler) and /dev/kvm, and runs them for real.

use std::process::Command;

#[path = "../../../testsupport/scratch.rs"]
mod scratch;

fn run(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    let o = Command::new(env!("CARGO_BIN_EXE_multios"))
        .args(args)
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run multios {args:?}: {e}"));
    assert!(
        o.status.success(),
        "multios {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

#[test]
fn results_file_keeps_stdout_for_the_program() {
    let dir = scratch::Scratch::new("multios-results", "file");
    let prog = ["--", "sh", "-c", "echo from-the-program"];
    let cases: [(&str, Vec<&str>, &str); 3] = [
        (
            "emulate",
            vec!["emulate", "--policy", "all", "--fc", "1us"],
            "mechanism",
        ),
        ("profile", vec!["profile", "-o", "p.json"], "schema_version"),
        ("lwk", vec!["lwk", "run"], "delegated_calls"),
    ];
    for (name, cmd, key) in cases {
        let file = format!("{name}.json");
        let args: Vec<&str> = ["--json", "--results", file.as_str()]
            .into_iter()
            .chain(cmd)
            .chain(prog)
            .collect();
        let o = run(&dir, &args);
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            "from-the-program\n",
            "{name}: stdout is the program's alone"
        );
        let text = std::fs::read_to_string(dir.join(&file)).expect("the results file");
        let v: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: not JSON ({e}): {text}"));
        assert!(v.get(key).is_some(), "{name}: {key} missing from {v}");
    }
    // A path that cannot be created is refused before anything runs, naming the flag.
    let o = Command::new(env!("CARGO_BIN_EXE_multios"))
        .args([
            "--results",
            "no/such/dir/r.json",
            "--json",
            "emulate",
            "--policy",
            "all",
            "--fc",
            "1us",
        ])
        .args(prog)
        .current_dir(&*dir)
        .output()
        .expect("run multios");
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty(), "the program did not run");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--results no/such/dir/r.json"), "{err}");
}

/// `report`'s positional RESULTS files are not `--results`: clap once gave both the same id and
/// handed a report's first input to the global option, which emptied it before reading it.
#[test]
fn results_file_is_not_reports_input() {
    let dir = scratch::Scratch::new("multios-results", "report-input");
    let input = dir.join("in.json");
    std::fs::write(&input, "not json").expect("write the input");
    let profile = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bzip2/profile.json");
    let o = Command::new(env!("CARGO_BIN_EXE_multios"))
        .args(["report", "-o"])
        .arg(dir.join("r.html"))
        .arg("--profile")
        .arg(&profile)
        .arg(&input)
        .output()
        .expect("run multios report");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("in.json") && err.contains("not JSON"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&input).expect("the input"),
        "not json",
        "the input is untouched"
    );
}
