//! Inputs found by fuzzing the CLI (reported 2026-11-28), each now refused with an error naming
//! the flag or the file, or handled, instead of:
//! - `--results p.json … --profile p.json` emptying p.json before reading it;
//! - reading `/dev/zero` given as a suite, graph, noise trace, policy list or samples file until
//!   the memory ran out;
//! - a suite input of 1e13 MiB, a signature of 10⁹ detours, `--servers 4294967295`, 100 s of work
//!   on a 100 MHz signature, `bench lwk --calls 0`: aborts and hangs;
//! - NaN, inf and 1e308 accepted and printed as results (`S_r = inf`, `-inf%`, C saved as null);
//! - `p = -0.0000%` for a profile without system calls;
//! - `eprintln!` panicking (exit 101) when stderr is a full device;
//! - a profile's command printed to the terminal with its escape sequences.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

#[path = "../../../testsupport/scratch.rs"]
mod scratch;

fn example_profile() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/bzip2/profile.json")
}

/// Runs multios in `dir` with `args`, stdin from /dev/null, killing it after `limit`.
fn run_in(dir: &Path, args: &[&str], limit: Duration) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_multios"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run multios {args:?}: {e}"));
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("multios {args:?} still ran after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

/// `args` fails quickly (no panic, no abort, no signal) with a message holding every one of `names`.
fn refused(dir: &Path, args: &[&str], names: &[&str]) {
    let o = run_in(dir, args, Duration::from_secs(30));
    let t = text(&o);
    let code = o.status.code();
    assert!(
        code.is_some_and(|c| c != 0 && c != 101 && c != 134),
        "{args:?}: {:?}\n{t}",
        o.status
    );
    assert!(!t.contains("panicked"), "{args:?}: {t}");
    for n in names {
        assert!(t.contains(n), "{args:?} must name {n}: {t}");
    }
}

fn succeeds(dir: &Path, args: &[&str], limit: Duration) -> String {
    let o = run_in(dir, args, limit);
    let t = text(&o);
    assert!(o.status.success(), "{args:?}: {:?}\n{t}", o.status);
    t
}

#[test]
fn issue_16_results_file_may_be_an_input_and_a_failed_run_leaves_it() {
    let dir = scratch::Scratch::new("multios-inputs", "results");
    let original = std::fs::read_to_string(example_profile()).expect("the example profile");
    std::fs::write(dir.join("p.json"), &original).expect("copy");
    // The results replace the input only once the run is done with it.
    let t = succeeds(
        &dir,
        &[
            "--json",
            "--results",
            "p.json",
            "model",
            "naive",
            "--profile",
            "p.json",
        ],
        Duration::from_secs(30),
    );
    let written = std::fs::read_to_string(dir.join("p.json")).expect("the results");
    let v: serde_json::Value =
        serde_json::from_str(&written).unwrap_or_else(|e| panic!("not JSON ({e}): {written}\n{t}"));
    assert!(v.is_object() || v.is_array(), "{v}");
    assert_ne!(written, original);
    // A failed run leaves FILE as it was, and no temporary file beside it.
    std::fs::write(dir.join("keep.json"), "kept").expect("write");
    refused(
        &dir,
        &[
            "--results",
            "keep.json",
            "model",
            "naive",
            "--profile",
            "no-such.json",
        ],
        &["no-such.json"],
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("keep.json")).expect("kept"),
        "kept"
    );
    let left: Vec<_> = std::fs::read_dir(&*dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // A device is written directly, never replaced.
    let o = run_in(
        &dir,
        &["--results", "/dev/null", "model", "naive", "--p", "0.1"],
        Duration::from_secs(30),
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(!Path::new("/dev/null").metadata().expect("/dev/null").is_file());
}

#[test]
fn issue_16_endless_files_stop_at_a_cap() {
    let dir = scratch::Scratch::new("multios-inputs", "endless");
    let p = example_profile();
    let p = p.to_str().expect("UTF-8 path");
    let cases: [(&[&str], &[&str]); 5] = [
        (
            &["validate", "--suite", "/dev/zero", "--out", "vout"],
            &["/dev/zero", "larger than"],
        ),
        (&["map", "partition", "/dev/zero"], &["/dev/zero", "larger than"]),
        (
            &[
                "noise",
                "scale",
                "--trace",
                "/dev/zero",
                "--work",
                "1ms",
                "--ranks",
                "1",
            ],
            &["/dev/zero", "larger than"],
        ),
        (
            &["model", "refined", "--profile", p, "--policy", "list:/dev/zero"],
            &["/dev/zero", "larger than"],
        ),
        (
            &[
                "emulate",
                "--policy",
                "all",
                "--fc",
                "samples:/dev/zero",
                "--",
                "true",
            ],
            &["/dev/zero", "larger than"],
        ),
    ];
    for (args, names) in cases {
        refused(&dir, args, names);
    }
}

#[test]
fn issue_16_big_values_are_refused_or_quick() {
    let dir = scratch::Scratch::new("multios-inputs", "big");
    std::fs::write(
        dir.join("suite.toml"),
        "[[workload]]\nname = \"w\"\nargv = [\"true\"]\n[[workload.input]]\nfile = \"in.txt\"\nkind = \"text\"\nmib = 1e13\n",
    )
    .expect("suite");
    refused(
        &dir,
        &["validate", "--suite", "suite.toml", "--out", "vout"],
        &["suite.toml", "'in.txt'", "mib = 10000000000000"],
    );
    refused(
        &dir,
        &[
            "noise",
            "scale",
            "--signature",
            "1000MHz:0.5ns,1Hz:0.5ns",
            "--work",
            "1ms",
            "--ranks",
            "1",
        ],
        &["1000MHz:0.5ns,1Hz:0.5ns", "detours"],
    );
    refused(
        &dir,
        &["bench", "lwk", "--runs", "1", "--calls", "0"],
        &["--calls"],
    );
    succeeds(
        &dir,
        &[
            "model",
            "queue",
            "--lambda",
            "1",
            "--mu",
            "10",
            "--servers",
            "4294967295",
        ],
        Duration::from_secs(20),
    );
    succeeds(
        &dir,
        &[
            "noise",
            "scale",
            "--signature",
            "100MHz:5ns",
            "--work",
            "100s",
            "--ranks",
            "1",
            "--steps",
            "2",
        ],
        Duration::from_secs(20),
    );
}

#[test]
fn issue_16_nan_inf_and_huge_numbers_are_refused() {
    let dir = scratch::Scratch::new("multios-inputs", "numbers");
    std::fs::write(
        dir.join("g.json"),
        r#"{"format": "multios-map-graph", "version": 3, "command": ["x"], "duration_s": 1.0, "nodes": [{"id": 1, "tgid": 1, "comm": "a", "cpu_ns": 1000000}, {"id": 2, "tgid": 2, "comm": "b", "cpu_ns": 2000000}], "edges": [{"from": 1, "to": 2, "kind": "pipe", "bytes": 100000, "count": 1000}]}"#,
    )
    .expect("graph");
    let topo = ["--topology", "pack:2 core:2 pu:2"];
    let place = |extra: &[&str]| -> Vec<String> {
        ["map", "place", "g.json"]
            .iter()
            .chain(topo.iter())
            .chain(extra.iter())
            .map(|s| s.to_string())
            .collect()
    };
    for (extra, name) in [
        (&["--per-hop", "NaN"][..], "--per-hop"),
        (&["--ref-hops", "0", "--per-hop", "1e308"][..], "--per-hop"),
        (&["--ns-per-event", "1e308"][..], "--ns-per-event"),
    ] {
        let args = place(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(&dir, &args, &[name]);
    }
    // Sanity: the same graph is placed with the defaults.
    let args = place(&[]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    succeeds(&dir, &args, Duration::from_secs(30));
    refused(
        &dir,
        &[
            "bench",
            "map",
            "--per-hop",
            "NaN",
            "--rounds",
            "1",
            "--repeats",
            "1",
        ],
        &["--per-hop"],
    );
    for v in ["NaN", "inf"] {
        refused(
            &dir,
            &["bench", "reserve", "--rounds", "1", "--fwq-seconds", v],
            &["--fwq-seconds"],
        );
    }
    refused(
        &dir,
        &[
            "model",
            "refined",
            "--syscall",
            "read:10:1s",
            "--g-prime",
            "read=0ns",
            "--policy",
            "none",
        ],
        &["g'(read)", "--g-prime"],
    );
    std::fs::write(
        dir.join("pairs.csv"),
        "name,predicted,measured\na,1,1\nb,1e308,1e-300\n",
    )
    .expect("pairs");
    refused(
        &dir,
        &["model", "fit", "--pairs", "pairs.csv"],
        &["pairs.csv:3", "too far apart"],
    );
    for flag in ["--iters", "--phases"] {
        let mut args = vec![
            "lwk",
            "validate",
            "--intensity",
            "1",
            "--iters",
            "1",
            "--phases",
            "1",
            "--repeat",
            "1",
        ];
        let at = args.iter().position(|a| *a == flag).expect("flag") + 1;
        args[at] = "0";
        refused(&dir, &args, &[flag]);
    }
}

#[test]
fn issue_16_profiles_with_sums_past_the_range_or_bad_ranks_are_refused() {
    let dir = scratch::Scratch::new("multios-inputs", "profiles");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(example_profile()).expect("profile")).expect("JSON");
    v["compute_time_s"] = serde_json::json!(1e308);
    for f in ["a.0.json", "a.1.json"] {
        std::fs::write(dir.join(f), v.to_string()).expect("write");
    }
    refused(
        &dir,
        &["profile", "merge", "a.0.json", "a.1.json", "-o", "m.json"],
        &["compute_time_s", "inf"],
    );
    assert!(!dir.join("m.json").exists(), "nothing saved");
    // A merged profile listing a rank twice, or a negative time of a rank.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(example_profile()).expect("profile")).expect("JSON");
    let rank = |r: u32, wall: f64| {
        serde_json::json!({"rank": r, "source": "x", "wall_time_s": wall, "compute_time_s": 1.0,
            "syscall_time_s": 0.5, "syscalls": 1, "partial": false})
    };
    v["ranks"] = serde_json::json!([rank(0, 1.0), rank(0, 1.0)]);
    std::fs::write(dir.join("dup.json"), v.to_string()).expect("write");
    refused(
        &dir,
        &["report", "extrap", "dup.json", "-o", "ex.txt"],
        &["dup.json", "ranks[1].rank", "appears twice"],
    );
    v["ranks"] = serde_json::json!([rank(0, -3.0), rank(1, 1.0)]);
    std::fs::write(dir.join("neg.json"), v.to_string()).expect("write");
    refused(
        &dir,
        &["report", "extrap", "neg.json", "-o", "ex.txt"],
        &["neg.json", "ranks[0].wall_time_s"],
    );
    // strace -c rows whose counts add up past 2^64 - 1.
    std::fs::write(
        dir.join("s.txt"),
        "% time     seconds  usecs/call     calls    errors syscall\n\
         ------ ----------- ----------- --------- --------- ----------------\n \
         54.32    0.003125           4 18446744073709551615           write\n \
         40.76    0.002345           2       993           write\n",
    )
    .expect("strace");
    refused(
        &dir,
        &["profile", "import", "s.txt", "-o", "i.json"],
        &["s.txt:4", "2^64"],
    );
}

#[test]
fn issue_16_output_is_safe_and_plus_zero() {
    let dir = scratch::Scratch::new("multios-inputs", "output");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(example_profile()).expect("profile")).expect("JSON");
    v["command"] = serde_json::json!(["\u{1b}]0;PWNED\u{7}\u{1b}[2J\u{1b}[31mred"]);
    std::fs::write(dir.join("esc.json"), v.to_string()).expect("write");
    let t = succeeds(
        &dir,
        &["model", "naive", "--profile", "esc.json"],
        Duration::from_secs(30),
    );
    assert!(!t.contains('\u{1b}') && !t.contains('\u{7}'), "{t:?}");
    assert!(t.contains("\u{241b}]0;PWNED"), "{t}");
    // No system calls: p is 0, not -0.
    v["syscalls"] = serde_json::json!([]);
    v["command"] = serde_json::json!(["x"]);
    std::fs::write(dir.join("none.json"), v.to_string()).expect("write");
    let t = succeeds(
        &dir,
        &["model", "refined", "--profile", "none.json"],
        Duration::from_secs(30),
    );
    assert!(t.contains("p = 0.0000%") && !t.contains("-0.0"), "{t}");
    // A full stderr loses the messages, not the run.
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let o = Command::new(env!("CARGO_BIN_EXE_multios"))
        .args(["plot", "fig2", "--out", "pl"])
        .current_dir(&*dir)
        .stdin(Stdio::null())
        .stderr(full)
        .output()
        .expect("run multios plot");
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn issue_16_unknown_names_are_refused() {
    let dir = scratch::Scratch::new("multios-inputs", "names");
    refused(&dir, &["demo", "--mechanism", "bogus"], &["bogus", "shm"]);
    refused(
        &dir,
        &[
            "validate",
            "--suite",
            "bundled",
            "--only",
            "bzip2,typo",
            "--out",
            "vout",
        ],
        &["--only", "'typo'", "bzip2, xz"],
    );
}
