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
