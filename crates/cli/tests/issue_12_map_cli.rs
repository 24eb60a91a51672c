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

/// A graph of the given processes in which 11 and 12 exchange 100 000 messages (the placement
/// pins that pair to one CPU); the others talk to nobody.
fn pair_graph(dir: &std::path::Path, nodes: &[(u32, &str)]) -> std::path::PathBuf {
    let node = |(id, comm): &(u32, &str)| {
        format!(r#"{{"id": {id}, "tgid": {id}, "comm": "{comm}", "cpu_ns": 1000000}}"#)
    };
    let text = format!(
        r#"{{"format": "multios-map-graph", "version": 2, "nodes": [{}], "edges": [{{"from": 11, "to": 12, "kind": "pipe", "bytes": 1000000, "count": 100000}}, {{"from": 12, "to": 11, "kind": "pipe", "bytes": 100000, "count": 100000}}]}}"#,
        nodes.iter().map(node).collect::<Vec<_>>().join(", ")
    );
    let g = dir.join("g.json");
    std::fs::write(&g, text).expect("write");
    g
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
    for ext in ["svg", "png"] {
        let pic = d.join(format!("g.{ext}"));
        let (code, _, err) = multios(&[
            "map",
            "show",
            &g,
            "-o",
            &pic.display().to_string(),
            "--topology",
            "pack:1 core:2",
        ]);
        assert_eq!(code, 0, "{err}");
        let bytes = std::fs::read(&pic).expect("picture");
        if ext == "svg" {
            let text = String::from_utf8_lossy(&bytes);
            assert!(text.contains("cluster 0") && text.contains("p1 1"), "{text}");
        } else {
            assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn issue_12_kernel_thread_is_refused() {
    let d = scratch("kthread");
    let out = d.join("x.json");
    // PID 2 is kthreadd on Linux
    let (code, _, err) = multios(&["map", "record", "-p", "2", "-o", &out.display().to_string()]);
    assert_ne!(code, 0);
    assert!(
        err.contains("process 2") && err.contains("kernel thread"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn issue_12_a_user_who_may_not_trace_is_told_so() {
    // an unprivileged user (nobody) asking to record a process: the eBPF load is refused
    let mut sleeper = Command::new("sleep").arg("5").spawn().expect("sleep");
    let out = std::env::temp_dir().join(format!("multios-issue12-nobody-{}.json", std::process::id()));
    let run = Command::new("setpriv")
        .args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_multios"))
        .args(["map", "record", "-p", &sleeper.id().to_string(), "-o"])
        .arg(&out)
        .output()
        .expect("setpriv (util-linux) runs");
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success(), "recording as nobody succeeded: {err}");
    assert!(
        err.contains("permission denied") && err.contains("CAP_BPF"),
        "the error says what is missing: {err}"
    );
    let _ = std::fs::remove_file(&out);
}

#[test]
fn issue_12_hwloc_xml_topology_errors_say_where() {
    let d = scratch("xml");
    let g = graph(&d);
    let xml = d.join("machine.xml");
    std::fs::write(
        &xml,
        "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n  <object type=\"Machine\">\n    <object type=\"Core\"><object type=\"PU\" os_index=\"zero\"/></object>\n  </object>\n</topology>\n",
    )
    .expect("write");
    let (code, _, err) = multios(&["map", "place", &g, "--topology", &xml.display().to_string()]);
    assert_ne!(code, 0);
    assert!(
        err.contains("machine.xml, line 4, column 25") && err.contains("os_index=\"zero\""),
        "{err}"
    );
    // a good file places
    std::fs::write(&xml, "<topology><object type=\"Package\"><object type=\"Core\"><object type=\"PU\" os_index=\"0\"/></object><object type=\"Core\"><object type=\"PU\" os_index=\"1\"/></object></object></topology>").expect("write");
    let (code, out, err) = multios(&[
        "map",
        "place",
        &g,
        "--topology",
        &xml.display().to_string(),
        "--nodes",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("hwloc XML") && out.contains("(2 PUs)"), "{out}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn issue_12_a_placement_on_cpus_not_allowed_is_refused() {
    let d = scratch("allowed");
    // one process that talks to nobody: free, so its CPUs are the whole package (CPUs 0 and 1)
    let text = r#"{"format": "multios-map-graph", "version": 2, "nodes": [{"id": 7, "tgid": 7, "comm": "true", "cpu_ns": 1000}], "edges": []}"#;
    let g = d.join("one.json");
    std::fs::write(&g, text).expect("write");
    let run = Command::new("taskset")
        .args(["-c", "0"])
        .arg(env!("CARGO_BIN_EXE_multios"))
        .args(["map", "run", "--graph"])
        .arg(&g)
        .args(["--", "true"])
        .output()
        .expect("taskset runs");
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success(), "{err}");
    assert!(
        err.contains("on CPU 1") && err.contains("allowed: 0"),
        "names the CPU and the allowed set: {err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn issue_12_map_run_places_children_as_they_appear() {
    let d = scratch("run");
    // two python3 processes started one after the other by a shell: the first pinned to CPU 1 with
    // a partner it talks to, the second free; each prints the CPUs it may run on after a pause
    let g = pair_graph(
        &d,
        &[(10, "sh"), (11, "python3"), (12, "python3"), (13, "python3")],
    );
    let probe = "import os, time; time.sleep(0.3); print(sorted(os.sched_getaffinity(0)))";
    let script = format!(
        "python3 -c '{probe}' > {a}; python3 -c '{probe}' > {b}; python3 -c '{probe}' > {c}",
        a = d.join("a").display(),
        b = d.join("b").display(),
        c = d.join("c").display()
    );
    // --sweep 5s: the contention rule decides after two sweeps, so this ~1 s run keeps its placement
    // even when other tests load the CPUs (with the default 100 ms a loaded CPU released the pair to
    // every CPU, by design, and this test failed beside the --learn test's pipeline)
    let (code, out, err) = multios(&[
        "map",
        "run",
        "--graph",
        &g.display().to_string(),
        "--sweep",
        "5s",
        "--json",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert_eq!(code, 0, "{err}");
    let rep: serde_json::Value = serde_json::from_str(&out).expect("json report");
    let read = |f: &str| {
        std::fs::read_to_string(d.join(f))
            .expect("output")
            .trim()
            .to_string()
    };
    // the pair (11, 12) shares a CPU: both pinned there; 13 is free
    let (a, b, c) = (read("a"), read("b"), read("c"));
    assert_eq!(a, b, "the two partners share a CPU; report {rep}");
    assert!(a == "[0]" || a == "[1]", "pinned to one CPU: {a}");
    let all: Vec<String> = (0..std::thread::available_parallelism().map_or(1, |n| n.get()))
        .map(|c| c.to_string())
        .collect();
    assert_eq!(
        c,
        format!("[{}]", all.join(", ")),
        "the free one may use every CPU"
    );
    assert!(
        rep["events"].as_u64().is_some_and(|e| e >= 3),
        "placed from process events: {rep}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn issue_12_map_run_learn_records_then_places_the_second_run() {
    // --learn: a first run recorded with eBPF (root), its graph partitioned and placed, then the
    // command run again with that placement; every process of the second run matches a recorded node.
    // --force-placement: this test is about learning, not about the decision rule, which kept
    // Linux's placement when the learned graph's prediction came out at 1.09× against the 10 %
    // margin (CI of stop 27); the decision is still computed and reported
    let (code, out, err) = multios(&[
        "map",
        "run",
        "--learn",
        "--force-placement",
        "--json",
        "--",
        "sh",
        "-c",
        "head -c 20000000 /dev/zero | cat > /dev/null",
    ]);
    assert_eq!(code, 0, "{err}");
    let rep: serde_json::Value = serde_json::from_str(&out).expect("json report");
    let applied = rep["applied"].as_array().expect("applied");
    for comm in ["head", "cat"] {
        assert!(
            applied.iter().any(|a| a["comm"] == comm && a["matched"] == true),
            "{comm} placed from the learned graph: {rep}"
        );
    }
    assert!(
        rep["events"].as_u64().is_some_and(|e| e >= 2),
        "placed from process events: {rep}"
    );
    assert_eq!(rep["decision"]["forced"], true, "{rep}");
    assert!(
        rep["decision"]["predicted_speedup"]
            .as_f64()
            .is_some_and(|s| s.is_finite() && s > 0.0),
        "the model's prediction is reported even when forced: {rep}"
    );
}

#[test]
fn issue_12_map_run_with_nothing_pinned_only_runs_the_program() {
    // a placement that pins nothing (one process that talks to nobody: free on every CPU) leaves
    // nothing to place: map run spawns and waits, nothing listens, and the exit code comes back
    let d = scratch("free");
    let text = r#"{"format": "multios-map-graph", "version": 2, "nodes": [{"id": 7, "tgid": 7, "comm": "sh", "cpu_ns": 1000}], "edges": []}"#;
    let g = d.join("one.json");
    std::fs::write(&g, text).expect("write");
    let (code, out, err) = multios(&[
        "map",
        "run",
        "--graph",
        &g.display().to_string(),
        "--json",
        "--",
        "sh",
        "-c",
        "grep Cpus_allowed_list /proc/self/status >&2; exit 4",
    ]);
    assert_eq!(code, 4, "the program's exit code: {err}");
    let rep: serde_json::Value = serde_json::from_str(&out).expect("json report");
    assert_eq!(rep["watched"], false, "{rep}");
    assert_eq!(rep["received"], 0, "no process events listened to: {rep}");
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    let want = if all == 1 {
        "0".to_string()
    } else {
        format!("0-{}", all - 1)
    };
    assert!(err.trim_end().ends_with(&want), "every CPU: {err}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn issue_12_map_run_starts_a_pinned_program_on_its_cpu() {
    // the program itself is one of a pair that shares a CPU: it starts there (no helper process
    // runs before it), and its first look at its own affinity already sees one CPU
    let d = scratch("root");
    let g = pair_graph(&d, &[(11, "grep"), (12, "grep")]);
    let (code, out, err) = multios(&[
        "map",
        "run",
        "--graph",
        &g.display().to_string(),
        "--sweep",
        "5s",
        "--json",
        "--",
        "grep",
        "Cpus_allowed_list",
        "/proc/self/status",
    ]);
    assert_eq!(code, 0, "{err}");
    let (first, rest) = out.split_once('\n').expect("grep's line, then the report");
    let cpus = first.split_whitespace().last().unwrap_or_default();
    assert!(cpus == "0" || cpus == "1", "one CPU from the start: {first}");
    let rep: serde_json::Value = serde_json::from_str(rest).expect("json report");
    assert_eq!(rep["watched"], true, "{rep}");
    let root = &rep["applied"][0];
    assert_eq!(root["comm"], "grep", "{rep}");
    assert_eq!(root["cpus"], cpus, "{rep}");
    // never given every CPU meanwhile: the kernel's event of the program's own fork (from map
    // run, under map run's name) is not a thread of the program (a first version took it for one)
    let applied = rep["applied"].as_array().expect("applied");
    assert!(
        applied
            .iter()
            .filter(|a| a["tid"] == root["tid"])
            .all(|a| a["cpus"] == cpus),
        "{rep}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// Two threads of one process (`comm`) that each compute 60 ms and wake each other 2000 times over
/// futexes: the affinity rule pins them together, the model predicts that slower than Linux's
/// placement (both CPUs computing).
fn computing_pair_graph(dir: &std::path::Path, comm: &str) -> std::path::PathBuf {
    let node = |id: u32| format!(r#"{{"id": {id}, "tgid": 10, "comm": "{comm}", "cpu_ns": 60000000}}"#);
    let edge = |a: u32, b: u32, kind: &str| {
        format!(r#"{{"from": {a}, "to": {b}, "kind": "{kind}", "bytes": 0, "count": 2000}}"#)
    };
    let text = format!(
        r#"{{"format": "multios-map-graph", "version": 2, "nodes": [{}, {}], "edges": [{}]}}"#,
        node(10),
        node(11),
        [
            edge(10, 11, "futex"),
            edge(11, 10, "futex"),
            edge(10, 11, "wakeup"),
            edge(11, 10, "wakeup")
        ]
        .join(", ")
    );
    let g = dir.join("computing.json");
    std::fs::write(&g, text).expect("write");
    g
}

#[test]
fn issue_12_map_run_keeps_linuxs_placement_when_its_model_predicts_a_loss() {
    let d = scratch("decide");
    let g = computing_pair_graph(&d, "sh");
    let g = g.display().to_string();
    // the table says which placement and why, with both predicted times
    let (code, out, err) = multios(&["map", "run", "--graph", &g, "--", "sh", "-c", "exit 0"]);
    assert_eq!(code, 0, "{err}");
    let _ = out;
    assert!(
        err.contains("map run: placement Linux's (nothing pinned)")
            && err.contains("under Linux's placement"),
        "{err}"
    );
    assert!(err.contains("--force-placement"), "{err}");
    // the JSON records the decision; nothing pinned, nothing watched
    let (code, out, err) = multios(&["map", "run", "--graph", &g, "--json", "--", "sh", "-c", "exit 0"]);
    assert_eq!(code, 0, "{err}");
    let rep: serde_json::Value = serde_json::from_str(&out).expect("json report");
    // the line on stderr in JSON mode too, the JSON on stdout alone
    assert!(err.contains("map run: placement Linux's"), "{err}");
    assert_eq!(rep["decision"]["choice"], "linux", "{rep}");
    assert_eq!(rep["decision"]["pinned"], 2, "{rep}");
    let (placed, linux) = (
        rep["decision"]["placed_s"].as_f64().expect("placed_s"),
        rep["decision"]["linux_s"].as_f64().expect("linux_s"),
    );
    assert!(placed > linux, "{rep}");
    assert_eq!(rep["watched"], false, "{rep}");
    // forced: applied, watched, and recorded as forced
    let (code, out, err) = multios(&[
        "map",
        "run",
        "--graph",
        &g,
        "--force-placement",
        "--sweep",
        "5s",
        "--json",
        "--",
        "sh",
        "-c",
        "exit 0",
    ]);
    assert_eq!(code, 0, "{err}");
    let rep: serde_json::Value = serde_json::from_str(&out).expect("json report");
    assert_eq!(rep["decision"]["choice"], "placement", "{rep}");
    assert_eq!(rep["decision"]["forced"], true, "{rep}");
    assert_eq!(rep["watched"], true, "{rep}");
    // map place reports the same comparison
    let (code, out, err) = multios(&["map", "place", &g, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["decision"]["choice"], "linux", "{v}");
    assert!(
        (v["linux_predicted_ns"].as_f64().expect("linux_predicted_ns") - linux * 1e9).abs() < 1.0,
        "{v}"
    );
    let (code, out, err) = multios(&["map", "place", &g]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("linux (nothing pinned)") && out.contains("map run: Linux's (nothing pinned)"),
        "{out}"
    );
    // a negative margin is refused, naming the flag
    let (code, _, err) = multios(&["map", "run", "--graph", &g, "--margin=-1", "--", "true"]);
    assert_ne!(code, 0);
    assert!(err.contains("--margin"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn issue_12_a_costs_file_without_the_packed_curve_is_named_with_the_fix() {
    // a calibrated model as `bench map --costs` wrote it before the packed arrangements
    let d = scratch("packed");
    let g = graph(&d);
    let row = |v: f64| format!("[{v}, {v}, {v}, {v}, {v}]");
    let curves = format!(
        r#"{{"bytes": [257.0, 2049.0, 8193.0, 32769.0, 61441.0], "together": {}, "alone": {}, "split": {}, "busy": {}}}"#,
        row(7000.0),
        row(50000.0),
        row(25000.0),
        row(21000.0)
    );
    let cost = r#"{"ns_per_event": 10000.0, "ns_per_byte": 0.4, "local_ns_per_event": 3000.0, "local_ns_per_byte": 0.2, "ns_per_idle_wake": 17000.0, "ns_per_shared_page": 100.0}"#;
    let old = d.join("old.json");
    std::fs::write(
        &old,
        format!(r#"{{"cost": {cost}, "per_hop": 0.5, "ref_hops": 2, "curves": {curves}}}"#),
    )
    .expect("write");
    let old = old.display().to_string();
    let (code, out, err) = multios(&["map", "place", &g, "--costs", &old]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("map run:"), "{out}");
    assert!(
        err.contains(&old) && err.contains("packed") && err.contains("multios bench map --costs"),
        "{err}"
    );
    // with the curve: no warning
    let new = d.join("new.json");
    let packed = format!(r#""packed": [{}, {}]"#, row(4000.0), row(5000.0));
    std::fs::write(
        &new,
        format!(
            r#"{{"cost": {cost}, "per_hop": 0.5, "ref_hops": 2, "curves": {}}}"#,
            curves.replacen('}', &format!(", {packed}}}"), 1)
        ),
    )
    .expect("write");
    let (code, _, err) = multios(&["map", "place", &g, "--costs", &new.display().to_string()]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("packed"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// `bench map` at its smallest: every calibration run carries the cross-CPU level probed around
/// it, the calibration is fitted per level, and each row is predicted per level with the pooled
/// and the line-in-the-round-trip predictions beside it (JSON and table).
#[test]
fn issue_12_bench_map_tags_each_calibration_run_with_its_level() {
    let dir = scratch("bench-levels");
    let work = dir.join("w");
    let args = |json: bool| -> Vec<String> {
        let mut v: Vec<String> = [
            "bench",
            "map",
            "--procs",
            "2",
            "--sizes",
            "1024",
            "--rounds",
            "200",
            "--repeats",
            "1",
            "--calibration-rounds",
            "1",
            "--programs",
            "none",
            "--overhead-pairs",
            "0",
            "--workdir",
        ]
        .map(String::from)
        .to_vec();
        v.push(work.display().to_string());
        if json {
            v.push("--json".into());
        }
        v
    };
    let a = args(true);
    let (code, out, err) = multios(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let runs = &j["calibration_runs"];
    let mut n = 0;
    for half in ["before", "middle", "after"] {
        for run in runs[half]
            .as_array()
            .expect(half)
            .iter()
            .flat_map(|r| r.as_array().expect("round"))
        {
            n += 1;
            let ns = run["level_ns"].as_f64().expect("every calibration run is probed");
            assert!(ns > 1.0 && ns < 1e6, "{run}");
            assert!(
                run["steady"].is_boolean() && run["arrangement"].is_string(),
                "{run}"
            );
        }
    }
    // one round before, one after the IPC configuration, one after: 74 runs each
    assert_eq!(n, 3 * 74, "{runs}");
    let levels = j["levels"]["levels_ns"].as_array().expect("levels");
    assert!(!levels.is_empty());
    let fits = j["levels"]["fits"].as_array().expect("fits");
    assert_eq!(fits.len(), levels.len());
    assert!(fits.iter().all(|f| f["calibration"]["samples"]
        .as_array()
        .is_some_and(|s| !s.is_empty())));
    assert!(
        j["levels"]["halves"]["two_cpu_same_level"].is_number()
            || j["levels"]["halves"]["two_cpu_same_level"].is_null()
    );
    let row = &j["ipc"][0];
    assert_eq!(row["levels"].as_array().map(Vec::len), Some(1));
    assert_eq!(row["map_runs_us"].as_array().map(Vec::len), Some(1));
    for p in ["predicted_pooled", "predicted_linear", "predicted_crossing"] {
        assert!(row[p]["map_us"].as_f64().is_some_and(|x| x > 0.0), "{p}: {row}");
    }
    assert!(row["predicted_map_us"].as_f64().is_some_and(|x| x > 0.0));
    for a in ["accuracy_pooled", "accuracy_linear", "accuracy_crossing"] {
        assert_eq!(j[a]["ipc"]["compared"], 2, "{a}");
    }
    assert_eq!(j["accuracy_ipc"]["compared"], 2);
    // the table says the same
    let a = args(false);
    let (code, out, err) = multios(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 0, "{err}");
    for s in [
        "Calibration by cross-CPU level",
        "every level (pooled)",
        "two-CPU within one level",
        "err map pooled",
        "pooled, IPC rows, both placements",
        "line in the round trip, IPC rows, both placements",
        "per level, crossing arrangements only, IPC rows, both placements",
    ] {
        assert!(out.contains(s), "missing '{s}':\n{out}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// A graph recorded beside other load (its `other_load`: 75 % of 2 CPUs for 1 s) is placed, with a
/// note on stderr that its interaction may not be the program's on a quiet machine; without the
/// field (older graphs, graphs by hand) nothing is said.
#[test]
fn issue_12_map_run_notes_a_graph_recorded_beside_other_load() {
    let d = scratch("other-load");
    let node = |id: u32| format!(r#"{{"id": {id}, "tgid": {id}, "comm": "p{id}", "cpu_ns": 1000000}}"#);
    let write = |name: &str, extra: &str| {
        let p = d.join(name);
        let text = format!(
            r#"{{"format": "multios-map-graph", "version": 2, "duration_s": 1.0, "nodes": [{}], "edges": []{extra}}}"#,
            [1, 2].map(node).join(",")
        );
        std::fs::write(&p, text).expect("write graph");
        p.display().to_string()
    };
    let loaded = write(
        "loaded.json",
        r#", "other_load": {"cpu_ns": 1500000000, "cpus": 2}"#,
    );
    let (code, _, err) = multios(&["map", "run", "--graph", &loaded, "--", "true"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("note: other tasks ran 75 % of the CPUs' time"),
        "{err}"
    );
    let quiet = write("quiet.json", "");
    let (code, _, err) = multios(&["map", "run", "--graph", &quiet, "--", "true"]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("other tasks ran"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// `map record`'s table gives the wake-ups that crossed CPUs beside the wake-up count (a number,
/// 0 included), and "-" for the kinds that have none; the graph file is version 3 with `across`
/// on its wake-up edges.
#[test]
fn issue_12_record_table_shows_the_wakeups_across_cpus() {
    let d = scratch("across");
    let g = d.join("g.json");
    let (code, out, err) = multios(&[
        "map",
        "record",
        "-o",
        &g.display().to_string(),
        "--",
        "sh",
        "-c",
        "for i in 1 2 3 4 5; do echo $i; done | cat > /dev/null",
    ]);
    assert_eq!(code, 0, "{err}");
    let header = out.lines().find(|l| l.starts_with("kind")).expect("a table");
    assert!(header.split_whitespace().last() == Some("across"), "{out}");
    let wakeup: Vec<&str> = out
        .lines()
        .find(|l| l.starts_with("wakeup"))
        .expect("a wakeup row")
        .split_whitespace()
        .collect();
    assert!(wakeup[4].parse::<u64>().is_ok(), "{out}");
    let pipe = out.lines().find(|l| l.starts_with("pipe")).expect("a pipe row");
    assert!(pipe.trim_end().ends_with('-'), "{out}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&g).expect("graph written")).expect("json");
    assert_eq!(v["version"], 3);
    let wakes: Vec<&serde_json::Value> = v["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .filter(|e| e["kind"] == "wakeup")
        .collect();
    assert!(
        wakes.iter().all(|e| e["across"].as_u64().is_some()),
        "every recorded wake-up edge carries `across`: {wakes:?}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// Reported 2026-11-28: a program a signal ended was reported as exiting 0 by `map record` and 1
/// by `map run`; both now exit as a shell reports it, 128 + the signal (139 for SIGSEGV), as
/// `emulate` and `profile` do.
#[test]
fn issue_12_map_record_and_run_exit_as_the_program_a_signal_ended() {
    let d = scratch("signaled");
    let g = d.join("g.json").display().to_string();
    let kill = ["sh", "-c", "kill -SEGV $$"];
    let mut args = vec!["map", "record", "-o", &g, "--"];
    args.extend(kill);
    let (code, _, err) = multios(&args);
    assert_eq!(code, 139, "map record: {err}");
    for extra in [&["--graph", &g][..], &["--learn"][..]] {
        let mut args = vec!["map", "run"];
        args.extend(extra);
        args.push("--");
        args.extend(kill);
        let (code, _, err) = multios(&args);
        assert_eq!(code, 139, "map run {extra:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// Reported 2026-11-28: `map run --learn` runs the program twice, and both runs wrote to stdout
/// (the output appeared twice) while the first used up stdin (the placed run read nothing). The
/// learning run now reads the same captured stdin and its output is discarded.
#[test]
fn issue_12_map_run_learn_shows_the_output_once_and_replays_stdin() {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_multios"))
        .args(["map", "run", "--learn", "--results", "/dev/null", "--"])
        .args(["sh", "-c", "read x; echo got $x"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run multios");
    if let Some(mut i) = child.stdin.take() {
        i.write_all(b"hello\n").expect("write stdin");
    }
    let out = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "got hello\n", "{err}");
    assert!(err.contains("learning run's output was discarded"), "{err}");
}

/// `multios` with any bytes as arguments and these environment variables only (and PATH):
/// (exit code, stdout, stderr).
fn multios_os(args: &[&std::ffi::OsStr], env: &[(&std::ffi::OsStr, &str)]) -> (i32, String, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_multios"));
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("NO_COLOR", "1")
        .args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap_or_else(|e| panic!("cannot run multios: {e}"));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Reported 2026-12: `map record` ran the program through `/bin/sh -c 'read -r _ <&3; exec "$@"'`:
/// dash dropped an environment variable whose name is not UTF-8 and the program saw the shell's
/// changes. The program is now exec'd directly: its environment is multios's, byte for byte.
#[test]
fn issue_16_map_record_runs_the_program_directly() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let d = scratch("direct16");
    let g = d.join("g.json");
    let copy = d.join("environ");
    let key = OsStr::from_bytes(b"K\xff");
    let (code, _, err) = multios_os(
        &[
            "map".as_ref(),
            "record".as_ref(),
            "-o".as_ref(),
            g.as_os_str(),
            "--".as_ref(),
            "cp".as_ref(),
            "/proc/self/environ".as_ref(),
            copy.as_os_str(),
        ],
        &[(key, "1"), (OsStr::new("_"), "before")],
    );
    assert_eq!(code, 0, "{err}");
    let environ = std::fs::read(&copy).expect("the program's environment");
    let entries: Vec<&[u8]> = environ.split(|&b| b == 0).filter(|e| !e.is_empty()).collect();
    assert!(entries.contains(&&b"K\xff=1"[..]), "{entries:?}");
    assert!(entries.contains(&&b"_=before"[..]), "$_ as given: {entries:?}");
    assert!(entries.contains(&&b"NO_COLOR=1"[..]), "{entries:?}");
    assert_eq!(
        entries.len(),
        4,
        "PATH, NO_COLOR, K\\xff, _ and nothing else: {entries:?}"
    );
    assert!(g.exists(), "the graph is written");
    let _ = std::fs::remove_dir_all(&d);
}

/// Reported 2026-12: `map record -- nonexistent_prog` ran dash, which said "exec:
/// nonexistent_prog: not found" and exited 127, and a one-node graph was written. The program is
/// now looked for first, as `emulate`, `profile` and `map run` do: refused by name, nothing written.
#[test]
fn issue_16_map_record_refuses_a_missing_program_before_starting() {
    let d = scratch("missing16");
    let g = d.join("g.json");
    let gs = g.display().to_string();
    let (code, _, err) = multios(&["map", "record", "-o", &gs, "--", "nonexistent_prog"]);
    assert_ne!(code, 0);
    assert_ne!(code, 127, "not the shell's 'not found': {err}");
    assert!(
        err.contains("'nonexistent_prog'") && err.contains("not found") && !err.contains("exec:"),
        "{err}"
    );
    assert!(!g.exists(), "no graph is written for a program that never ran");
    let plain = d.join("plain");
    std::fs::write(&plain, "echo hi\n").expect("write");
    let ps = plain.display().to_string();
    let (code, _, err) = multios(&["map", "record", "-o", &gs, "--", &ps]);
    assert_ne!(code, 0);
    assert!(err.contains(&ps) && err.contains("not executable"), "{err}");
    for extra in [&["--learn"][..], &["--graph", &gs][..]] {
        let mut args = vec!["map", "run"];
        args.extend(extra);
        args.extend(["--", "nonexistent_prog"]);
        let (code, _, err) = multios(&args);
        assert_ne!(code, 0);
        assert!(
            err.contains("'nonexistent_prog'") && err.contains("not found"),
            "map run {extra:?}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// Reported 2026-12: `map record` and `map run` took their command as UTF-8 strings: an argument
/// that is not UTF-8 failed with "invalid UTF-8 was detected". It is passed to exec unchanged (the
/// graph shows it lossily).
#[test]
fn issue_16_map_record_and_run_pass_non_utf8_arguments_unchanged() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let d = scratch("bytes16");
    let g = d.join("g.json");
    let f = d.join(OsStr::from_bytes(b"bad\xff"));
    std::fs::write(&f, "hello\n").expect("write");
    let (code, out, err) = multios_os(
        &[
            "map".as_ref(),
            "record".as_ref(),
            "-o".as_ref(),
            g.as_os_str(),
            "--".as_ref(),
            "cat".as_ref(),
            f.as_os_str(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("hello\n"), "cat read the file: {out}");
    let graph = std::fs::read_to_string(&g).expect("graph");
    assert!(graph.contains("bad\u{fffd}"), "{graph}");
    let copy = d.join(OsStr::from_bytes(b"copy\xfe"));
    let (code, _, err) = multios_os(
        &[
            "map".as_ref(),
            "run".as_ref(),
            "--learn".as_ref(),
            "--".as_ref(),
            "cp".as_ref(),
            f.as_os_str(),
            copy.as_os_str(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read(&copy).expect("copied"), b"hello\n");
    let _ = std::fs::remove_dir_all(&d);
}

/// Reported 2026-12: a graph listing one node id twice was accepted, and the node ended up in two
/// clusters. It is refused when loaded, with the id named (as a dangling edge is).
#[test]
fn issue_16_a_graph_with_a_duplicated_node_id_is_refused() {
    let d = scratch("dup16");
    let g = pair_graph(&d, &[(11, "a"), (12, "b"), (11, "a")]);
    let gs = g.display().to_string();
    for sub in ["partition", "place"] {
        let (code, _, err) = multios(&["map", sub, &gs, "--topology", "pack:1 core:2"]);
        assert_ne!(code, 0, "map {sub}");
        assert!(
            err.contains("node id 11 appears twice") && err.contains("entries 0 and 2"),
            "map {sub}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// Reported 2026-12: `--topology "pack:2 pack:2 pu:1"` said "level 'package' must come before
/// 'package'". A repeated level is named as repeated, with where it is and where it came first.
#[test]
fn issue_16_a_repeated_topology_level_says_so_and_where() {
    let d = scratch("toporep16");
    let g = graph(&d);
    let (code, _, err) = multios(&["map", "place", &g, "--topology", "pack:2 pack:2 pu:1"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("column 8")
            && err.contains("'package' is repeated")
            && err.contains("already given at column 1")
            && !err.contains("must come before"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// Reported 2026-12: `map partition` of an empty graph printed "W_c -0.000".
#[test]
fn issue_16_an_empty_graph_partitions_to_zero_not_negative_zero() {
    let d = scratch("empty16");
    let g = d.join("g.json");
    std::fs::write(
        &g,
        r#"{"format": "multios-map-graph", "version": 3, "nodes": [], "edges": []}"#,
    )
    .expect("write");
    let gs = g.display().to_string();
    let (code, out, err) = multios(&["map", "partition", &gs, "--topology", "pack:1 core:2"]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("-0"), "{out}");
    let row = out
        .lines()
        .find(|l| l.starts_with("networkedos"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(row.ends_with(" 0.000"), "W_c is 0: {row}");
    let (code, out, err) = multios(&["map", "partition", &gs, "--topology", "pack:1 core:2", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("-0.0"), "{out}");
    let _ = std::fs::remove_dir_all(&d);
}
