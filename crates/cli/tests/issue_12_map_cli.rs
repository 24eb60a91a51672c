//! Issue #12: `multios map` from the command line — errors that say where, and the tables on a small
//! hand-written graph (the eBPF recording itself is tested in crates/map/tests/issue_12_record.rs).

use std::process::Command;

fn multios(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_multios"))
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run multios: {e}"));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn graph(dir: &std::path::Path) -> String {
    let node = |id: u32| format!(r#"{{"id": {id}, "tgid": {id}, "comm": "p{id}", "cpu_ns": 1000000}}"#);
    let edge = |a: u32, b: u32| {
        format!(r#"{{"from": {a}, "to": {b}, "kind": "pipe", "bytes": 100000000, "count": 1000}}"#)
    };
    let text = format!(
        r#"{{"format": "multios-map-graph", "version": 1, "nodes": [{}], "edges": [{}]}}"#,
        [1, 2, 3, 4].map(node).join(","),
        [edge(1, 2), edge(3, 4)].join(",")
    );
    let p = dir.join("g.json");
    std::fs::write(&p, text).expect("write graph");
    p.display().to_string()
}

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("multios-issue12-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("scratch");
    d
}

#[test]
fn issue_12_topology_string_errors_say_where() {
    let d = scratch("topo");
    let g = graph(&d);
    let (code, _, err) = multios(&["map", "place", &g, "--topology", "pack:2 core:x"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("column 8") && err.contains("'x' is not a positive count"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn issue_12_missing_pid_is_named() {
    let d = scratch("pid");
    let out = d.join("x.json");
    let (code, _, err) = multios(&[
        "map",
        "record",
        "-p",
        "1073741800",
        "-o",
        &out.display().to_string(),
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("process 1073741800 does not exist"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn issue_12_partition_and_place_tables() {
    let d = scratch("tables");
    let g = graph(&d);
    let (code, out, err) = multios(&["map", "partition", &g, "--topology", "pack:1 core:2", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["networkedos"]["quality"]["n"], 2, "{out}");
    let (code, out, err) = multios(&["map", "place", &g, "--topology", "pack:2 core:4", "--csv"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.lines().next().is_some_and(|h| h.contains("HOP_BYTE")),
        "{out}"
    );
    let svg = d.join("g.svg");
    let (code, _, err) = multios(&[
        "map",
        "show",
        &g,
        "-o",
        &svg.display().to_string(),
        "--topology",
        "pack:1 core:2",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read_to_string(&svg).expect("svg").contains("cluster 0"));
    let _ = std::fs::remove_dir_all(&d);
}
