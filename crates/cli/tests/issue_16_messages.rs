//! Issue #16: messages that name the right thing, once, with nothing raw from a file reaching the
//! terminal; and (issues #12, #6) `map` and `noise scale` output that agrees with its inputs.

mod common;
use common::multios;

#[path = "../../../testsupport/scratch.rs"]
mod scratch;

fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p.display().to_string()
}

#[test]
fn issue_16_report_output_errors_name_the_html_report() {
    let profile = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/bzip2/profile.json");
    let (code, _, err) = multios(&["report", "-o", "/nonexistent-dir/r.html", "--profile", profile]);
    assert_ne!(code, 0);
    assert!(
        err.contains("-o /nonexistent-dir/r.html: cannot write the HTML report there"),
        "{err}"
    );
    assert!(!err.contains("profile /nonexistent"), "{err}");
}

#[test]
fn issue_16_an_empty_cpu_list_is_said_once() {
    for args in [
        vec!["lwk", "run", "--cpus", "", "--", "true"],
        vec!["noise", "fwq", "--cpus", ""],
        vec![
            "emulate",
            "--policy",
            "mckernel",
            "--fc",
            "1us",
            "--compute-cpus",
            "",
            "--",
            "true",
        ],
    ] {
        let (code, _, err) = multios(&args);
        assert_ne!(code, 0, "{args:?}");
        assert!(err.contains("the CPU list is empty"), "{args:?}: {err}");
        assert!(!err.contains("CPU list the CPU list"), "{args:?}: {err}");
    }
    let (_, _, err) = multios(&["lwk", "run", "--cpus", "0,x", "--", "true"]);
    assert!(
        err.contains("--cpus: CPU list '0,x': 'x' is not a CPU number"),
        "{err}"
    );
}

#[test]
fn issue_16_overrides_that_hold_no_list_or_odd_bytes_are_named() {
    let d = scratch::Scratch::new("multios-msg16", "ovr");
    let null = write(&d, "null.yaml", "# no list yet\noverrides:\n");
    let (code, _, err) = multios(&["lwk", "run", "--overrides", &null, "--", "true"]);
    assert_ne!(code, 0, "a null list was read as no override: {err}");
    assert!(err.contains("null.yaml:2:1: `overrides:` holds no list"), "{err}");
    let nul = write(
        &d,
        "nul.yaml",
        "overrides:\n  - function: \"clock_gettime\\0\\e[2J\"\n    with: tsc\n",
    );
    let (code, _, err) = multios(&["lwk", "run", "--overrides", &nul, "--", "true"]);
    assert_ne!(code, 0);
    assert!(err.contains("function 'clock_gettime\\0\\u{1b}[2J'"), "{err:?}");
    assert!(!err.contains(['\0', '\u{1b}']), "{err:?}");
}

#[test]
fn issue_16_hotspots_sum_huge_durations_without_wrapping() {
    let d = scratch::Scratch::new("multios-msg16", "hot");
    let ev = r#"{"t_ns":1,"cpu":0,"kind":"local","name":"brk","nr":12,"dur_ns":9223372036854775807,"ret":0,"rip":0,"caller":0,"frames":[]}"#;
    let text = format!(
        "{}\n{ev}\n{ev}\n{ev}\n",
        r#"{"format":"multios-lwk-trace","version":2,"program":"./p","pid":1}"#
    );
    let t = write(&d, "t.trace", &text);
    let (code, out, err) = multios(&["--json", "lwk", "hotspots", &t]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    // 3 × (2⁶³ − 1) = 27670116110564327421: wrapped to 2⁶³ − 3 before, the mean a third of a call
    assert!(out.contains("\"total_ns\": 27670116110564327421"), "{out}");
    let mean = v["rows"][0]["mean_ns"].as_f64().expect("mean");
    assert!((mean / 9.223372036854776e18 - 1.0).abs() < 1e-12, "{mean}");
}

#[test]
fn issue_12_map_show_needs_an_extension_and_reports_a_failed_write() {
    let d = scratch::Scratch::new("multios-msg12", "show");
    let g = concat!(env!("CARGO_MANIFEST_DIR"), "/../map/tests/data/head_cat_wc.json");
    let (code, _, err) = multios(&["map", "show", g, "-o", &d.join("g").display().to_string()]);
    assert_ne!(code, 0);
    assert!(err.contains("has no extension") && !err.contains("'.'"), "{err}");
    let full = d.join("full.svg");
    std::os::unix::fs::symlink("/dev/full", &full).expect("symlink");
    let (code, _, err) = multios(&["map", "show", g, "-o", &full.display().to_string()]);
    assert_ne!(code, 0, "the SVG went nowhere and exit 0: {err}");
    assert!(err.contains("full.svg") && err.contains("No space left"), "{err}");
}

#[test]
fn issue_12_map_tables_show_control_bytes_in_names_escaped() {
    let d = scratch::Scratch::new("multios-msg12", "ctl");
    let g = write(
        &d,
        "g.json",
        r#"{"format": "multios-map-graph", "version": 1, "nodes": [{"id": 1, "tgid": 1, "comm": "a\u0001b\u001b[2J", "cpu_ns": 1000000}, {"id": 2, "tgid": 2, "comm": "c", "cpu_ns": 1000000}], "edges": [{"from": 1, "to": 2, "kind": "pipe", "bytes": 1000000, "count": 1000}]}"#,
    );
    for args in [vec!["map", "partition", &g], vec!["map", "place", &g, "--nodes"]] {
        let (code, out, err) = multios(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(!out.contains(['\u{1}', '\u{1b}']), "{args:?}: {out:?}");
        assert!(out.contains("a␁b␛[2J"), "{args:?}: {out}");
    }
}

#[test]
fn issue_6_noise_scale_says_what_the_components_add_to_when_detours_merge() {
    let (code, out, err) = multios(&[
        "noise",
        "scale",
        "--signature",
        "10Hz:1ms,20Hz:1ms",
        "--work",
        "100us",
        "--ranks",
        "1",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("3 detours per 100.000 ms cycle, net noise 3.000 %,"),
        "{out}"
    );
    let (code, out, err) = multios(&[
        "noise",
        "scale",
        "--signature",
        "1kHz:25us,100Hz:1ms",
        "--work",
        "100us",
        "--ranks",
        "1",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("net noise 12.250 % (the components add to 12.500 %: detours of different components that overlap count once)"),
        "{out}"
    );
}
