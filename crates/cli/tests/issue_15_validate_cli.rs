//! Issue #15 through the CLI, `multios validate --suite FILE` and `--workload NAME -- CMD`: real
//! programs profiled, projected with estimated parameters and measured with paired runs; one row
//! per workload and target, the accuracy beside the fitted one. Needs root (the eBPF profiler) and
//! the emulator, and runs them for real. No timing is asserted.

use std::path::Path;
use std::process::{Command, Output, Stdio};

#[path = "../../../testsupport/scratch.rs"]
mod scratch;

fn multios(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_multios"))
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run multios {args:?}: {e}"))
}

const TINY: &str = r#"
[[workload]]
name = "wc"
argv = ["wc", "-l", "in.txt"]
[[workload.input]]
file = "in.txt"
kind = "text"
mib = 0.25
[workload.check]
stdout_contains = "in.txt"

[[workload]]
name = "sort"
argv = ["sort", "-o", "out.txt", "in.txt"]
[[workload.input]]
file = "in.txt"
kind = "random"
mib = 0.25
[workload.check]
creates = ["out.txt"]
"#;

fn json(o: &Output) -> serde_json::Value {
    assert!(
        o.status.success(),
        "multios failed: {}\n{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&o.stdout)))
}

#[test]
fn issue_15_a_tiny_suite_gives_a_row_per_workload() {
    let dir = scratch::Scratch::new("multios-issue15", "suite");
    std::fs::write(dir.join("tiny.toml"), TINY).expect("write the suite");
    let o = multios(
        &dir,
        &[
            "--json",
            "validate",
            "--suite",
            "tiny.toml",
            "--mechanism",
            "shm",
            "--policy",
            "all",
            "--fc",
            "10us",
            "--runs",
            "3",
            "--out",
            "out",
        ],
    );
    let v = json(&o);
    let w = v["workloads"].as_array().expect("workloads");
    let names: Vec<&str> = w.iter().filter_map(|w| w["name"].as_str()).collect();
    assert_eq!(names, ["wc", "sort"], "{v}");
    // 3 pairs in ABBA order (N E | E N | N E) hold 2 A/A pairs: (E, E) and (N, N); from them the
    // accuracy's noise ceiling.
    for w in w {
        let p = &w["points"][0];
        assert_eq!(p["aa_log_ratios"].as_array().map(Vec::len), Some(2), "{w}");
        let c = w["accuracy"][0]["noise_ceiling"].as_f64();
        assert!(c.is_some_and(|c| c <= 100.0), "{w}");
    }
    for w in w {
        let points = w["points"].as_array().expect("points");
        assert_eq!(points.len(), 1, "{w}");
        assert_eq!(points[0]["target"], "emulate:shm");
        assert!(points[0]["measured"].as_f64().is_some_and(f64::is_finite), "{w}");
        let acc = w["accuracy"].as_array().expect("accuracy");
        assert_eq!(acc.len(), 1, "{w}");
        assert!(
            acc[0]["estimated"].is_number() && acc[0]["fitted"].is_number(),
            "{w}"
        );
        // --terms none (the default): the paper's projection alone.
        assert!(points[0]["with_terms"].is_null(), "{w}");
    }
    assert!(v["overall"].as_array().is_some_and(|o| o.len() == 1), "{v}");
    for f in [
        "out/points.csv",
        "out/accuracy.csv",
        "out/validate-real-speedup.png",
    ] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
}

#[test]
fn issue_15_a_workload_whose_check_fails_is_skipped_with_the_reason() {
    let dir = scratch::Scratch::new("multios-issue15", "check");
    let suite = TINY.replace(
        "stdout_contains = \"in.txt\"",
        "stdout_contains = \"no such text\"",
    );
    std::fs::write(dir.join("tiny.toml"), suite).expect("write the suite");
    let o = multios(
        &dir,
        &[
            "--json",
            "validate",
            "--suite",
            "tiny.toml",
            "--only",
            "wc,sort",
            "--mechanism",
            "shm",
            "--policy",
            "all",
            "--fc",
            "10us",
            "--runs",
            "1",
            "--out",
            "out",
        ],
    );
    let v = json(&o);
    let skipped = v["skipped"].as_array().expect("skipped");
    assert_eq!(skipped.len(), 1, "{v}");
    assert_eq!(skipped[0][0], "wc");
    assert!(
        skipped[0][1].as_str().is_some_and(|s| s.contains("no such text")),
        "{v}"
    );
    assert_eq!(v["workloads"].as_array().map(Vec::len), Some(1), "{v}");
}

#[test]
fn issue_15_workload_validates_one_command_with_the_startup_term() {
    let dir = scratch::Scratch::new("multios-issue15", "workload");
    let o = multios(
        &dir,
        &[
            "--json",
            "validate",
            "--workload",
            "ls",
            "--mechanism",
            "shm",
            "--policy",
            "all",
            "--fc",
            "10us",
            "--runs",
            "1",
            "--terms",
            "startup",
            "--out",
            "out",
            "--",
            "ls",
            "-lR",
            "/usr/include",
        ],
    );
    let v = json(&o);
    let p = &v["workloads"][0]["points"][0];
    assert!(p["with_terms"].as_f64().is_some_and(f64::is_finite), "{v}");
    assert!(p["terms"]["startup_s"].as_f64().is_some_and(|s| s >= 0.0), "{v}");
    // The term's own column (its projection alone) and its accuracy beside the paper's.
    assert!(
        p["per_term"]["startup"].as_f64().is_some_and(f64::is_finite),
        "{v}"
    );
    let acc = &v["workloads"][0]["accuracy"][0];
    assert!(
        acc["per_term"]["startup"].is_number() && acc["with_terms"].is_number(),
        "{v}"
    );
    // The fit on top of the corrected model, beside the paper's fitted column.
    assert!(
        acc["fitted_with_terms"].is_number() && acc["fitted_with_terms_gamma"].is_number(),
        "{v}"
    );
    assert!(p["fitted_with_terms"].as_f64().is_some_and(f64::is_finite), "{v}");
    // What its microbenchmark measured, once per target.
    let m = v["term_measurements"].as_array().expect("term_measurements");
    assert_eq!(m.len(), 1, "{v}");
    assert_eq!(
        (m[0]["target"].as_str(), m[0]["term"].as_str()),
        (Some("emulate:shm"), Some("startup"))
    );
    let csv = std::fs::read_to_string(dir.join("out/accuracy.csv")).expect("accuracy.csv");
    assert!(
        csv.lines()
            .next()
            .is_some_and(|h| h.contains("+startup %") && h.contains("fitted with terms %")),
        "{csv}"
    );
    assert!(dir.join("out/terms.csv").is_file());
}

#[test]
fn issue_15_unknown_terms_and_a_command_without_workload_are_refused() {
    let dir = scratch::Scratch::new("multios-issue15", "refused");
    let o = multios(
        &dir,
        &["validate", "--workload", "x", "--terms", "tlb", "--", "true"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("'tlb'"));
    let o = multios(&dir, &["validate", "--", "true"]);
    assert_ne!(o.status.code(), Some(0));
}

/// `startup-own`: the workload's own program doing nothing (`startup_argv`) is measured in the LWK
/// beside `true`, replaces `true`'s start-up in the projection of that workload, and a workload
/// without one keeps `startup`'s with a note. `--lwk-only` measures no emulator mechanism.
#[test]
fn issue_15_startup_own_is_measured_on_the_workloads_own_empty_program() {
    let dir = scratch::Scratch::new("multios-issue15", "startup-own");
    let suite = r#"
[[workload]]
name = "wc"
argv = ["wc", "-l", "in.txt"]
startup_argv = ["wc", "-l", "/dev/null"]
[[workload.input]]
file = "in.txt"
kind = "text"
mib = 0.25

[[workload]]
name = "cat"
argv = ["cat", "in.txt"]
[[workload.input]]
file = "in.txt"
kind = "text"
mib = 0.25
"#;
    std::fs::write(dir.join("own.toml"), suite).expect("write the suite");
    let o = multios(
        &dir,
        &[
            "--json",
            "validate",
            "--suite",
            "own.toml",
            "--lwk-only",
            "--policy",
            "all",
            "--runs",
            "1",
            "--terms",
            "startup,startup-own",
            "--out",
            "out",
        ],
    );
    let v = json(&o);
    let ws = v["workloads"].as_array().expect("workloads");
    assert_eq!(ws.len(), 2, "{v}");
    for w in ws {
        let targets: Vec<_> = w["points"]
            .as_array()
            .expect("points")
            .iter()
            .map(|p| p["target"].as_str())
            .collect();
        assert_eq!(targets, [Some("lwk")], "--lwk-only: {v}");
    }
    let wc = &ws[0]["points"][0];
    let own = wc["terms"]["startup_own_s"].as_f64().expect("wc's startup_own_s");
    let t = wc["terms"]["startup_s"].as_f64().expect("wc's startup_s");
    assert!(own >= 0.0 && t >= 0.0, "{v}");
    // With both on, the workload's own start-up is the one added.
    let with = wc["with_terms"].as_f64().expect("with_terms");
    let alone = wc["per_term"]["startup-own"].as_f64().expect("+startup-own");
    assert_eq!(with.to_bits(), alone.to_bits(), "{v}");
    let cat = &ws[1];
    assert!(cat["points"][0]["terms"]["startup_own_s"].is_null(), "{v}");
    assert!(
        cat["notes"]
            .as_array()
            .expect("notes")
            .iter()
            .any(|n| n.as_str().is_some_and(|n| n.contains("startup_argv"))),
        "{v}"
    );
    let m = v["term_measurements"].as_array().expect("term_measurements");
    assert!(
        m.iter().any(|m| m["term"] == "startup-own"
            && m["target"] == "lwk"
            && m["numbers"]["startup_own_ns"].is_number()),
        "{v}"
    );
}

/// `touch` (the LWK's first touches): the pages are the workload's native minor faults less its
/// empty run's — dd reading 32 MiB into one buffer touches ≈ 8 192 pages its `count=0` run does
/// not — priced by the touch microbenchmark, which the output keeps; with `at-map`, the pages the
/// LWK populates at map time come from the profile's anonymous ranges, priced by the same
/// microbenchmark's populate phase. No timing is asserted.
#[test]
fn issue_15_touch_counts_the_pages_the_workload_touches_beyond_its_empty_run() {
    let dir = scratch::Scratch::new("multios-issue15", "touch");
    let suite = r#"
[[workload]]
name = "dd"
argv = ["dd", "if=/dev/zero", "of=/dev/null", "bs=32M", "count=1", "status=none"]
startup_argv = ["dd", "if=/dev/zero", "of=/dev/null", "bs=32M", "count=0", "status=none"]
"#;
    std::fs::write(dir.join("touch.toml"), suite).expect("write the suite");
    let o = multios(
        &dir,
        &[
            "--json",
            "validate",
            "--suite",
            "touch.toml",
            "--lwk-only",
            "--policy",
            "all",
            "--runs",
            "1",
            "--terms",
            "startup-own,touch,at-map",
        ],
    );
    let v = json(&o);
    let p = &v["workloads"][0]["points"][0];
    let pages = p["terms"]["touch"]["pages"].as_f64().expect("touch pages");
    // dd's 32 MiB buffer: the LWK populates its first 4 MiB (its `count=0` run's buffer too,
    // when it allocates one), so 0 to 1 024 pages beyond the empty run's.
    let populated = p["terms"]["at_map"]["pages"].as_f64().expect("at-map pages");
    assert!((0.0..=1100.0).contains(&populated), "{populated}: {v}");
    assert!(
        p["terms"]["at_map"]["populate_s"]
            .as_f64()
            .is_some_and(|s| s >= 0.0),
        "{v}"
    );
    assert!(
        p["without_term"]["at-map"].as_f64().is_some_and(f64::is_finite),
        "{v}"
    );
    assert!((4_000.0..20_000.0).contains(&pages), "{pages}: {v}");
    assert!(
        p["terms"]["touch"]["per_page_s"]
            .as_f64()
            .is_some_and(|s| s >= 0.0),
        "{v}"
    );
    assert!(p["per_term"]["touch"].as_f64().is_some_and(f64::is_finite), "{v}");
    let m = v["term_measurements"].as_array().expect("term_measurements");
    assert!(
        m.iter().any(|m| m["term"] == "touch"
            && m["target"] == "lwk"
            && m["numbers"]["lwk_touch_ns"].is_number()
            && m["numbers"]["native_touch_ns"].is_number()
            && m["numbers"]["populate_per_page_ns"].is_number()
            && m["numbers"]["lwk_at_map.chunk_touch_ns"].is_number()),
        "{v}"
    );
}

/// Every pair records the cross-CPU round trip its runs saw and, with the guard
/// (`--level-guard`), the f_c measured in its own group; without it (the default) the probes are recorded,
/// nothing is repeated, and f_c comes from one measurement whose level is recorded too.
#[test]
fn issue_15_every_pair_records_the_cross_cpu_level_and_the_f_c_it_is_projected_from() {
    let dir = scratch::Scratch::new("multios-issue15", "level");
    std::fs::write(dir.join("tiny.toml"), TINY).expect("write the suite");
    let args = |guard: bool, lwk: bool| {
        let mut a = vec![
            "--json",
            "validate",
            "--suite",
            "tiny.toml",
            "--only",
            "wc",
            "--mechanism",
            "shm",
            "--policy",
            "all",
            "--fc",
            "10us",
            "--runs",
            "2",
            "--out",
            "out",
        ];
        if lwk {
            a.push("--lwk");
        }
        if guard {
            a.push("--level-guard");
        }
        a
    };
    let on = json(&multios(&dir, &args(true, true)));
    let points = on["workloads"][0]["points"].as_array().expect("points").clone();
    assert_eq!(points.len(), 2, "shm and the LWK: {on}");
    for p in &points {
        assert_eq!(p["level_guard"], true, "{p}");
        let kept = p["levels"]["kept"].as_array().expect("the kept pairs");
        assert_eq!(kept.len(), 2, "one record per pair: {p}");
        let fc = p["fc_s"].as_f64().expect("f_c");
        for k in kept {
            // Start, after the f_c microbenchmark, between the runs, after them.
            assert_eq!(k["probes_ns"].as_array().map(Vec::len), Some(4), "{k}");
            assert!(k["level_ns"].as_f64().is_some_and(|l| l > 0.0), "{k}");
            assert!(k["fc_model_s"].as_f64().is_some_and(|f| f > fc), "{k}");
        }
        let repeats = p["level_repeats"].as_u64().expect("repeats");
        assert_eq!(
            p["levels"]["repeated"].as_array().map(|r| r.len() as u64),
            Some(repeats)
        );
        assert!(repeats <= 2 * 3, "bounded: {p}");
        assert!(
            p["level_ns"].as_f64().is_some() && p["fc_level_ns"].as_f64().is_some(),
            "{p}"
        );
        // The point's model f_c is the median of its pairs' (each measured in its level).
        let m: Vec<f64> = kept.iter().filter_map(|k| k["fc_model_s"].as_f64()).collect();
        let median = (m[0] + m[1]) / 2.0;
        assert!(
            (p["fc_model_s"].as_f64().expect("model f_c") - median).abs() < 1e-12,
            "{p}"
        );
    }
    let csv = std::fs::read_to_string(dir.join("out/points.csv")).expect("points.csv");
    assert!(
        csv.lines().next().is_some_and(|h| h.contains("cross-CPU ns")),
        "{csv}"
    );

    let off = json(&multios(&dir, &args(false, false)));
    let p = &off["workloads"][0]["points"][0];
    assert_eq!(p["level_guard"], false, "{p}");
    assert_eq!(p["level_repeats"], 0, "{p}");
    for k in p["levels"]["kept"].as_array().expect("kept") {
        // Start, between the runs, after them; no f_c in the group.
        assert_eq!(k["probes_ns"].as_array().map(Vec::len), Some(3), "{k}");
        assert!(k["fc_model_s"].is_null(), "{k}");
    }
    assert!(p["fc_level_ns"].as_f64().is_some_and(|l| l > 0.0), "{p}");
}

/// `memcalls` (the LWK's own mmap/munmap/mremap) and the LWK's f_c from the rewritten site's row:
/// dd with a 16 MiB block maps at least 16 MiB (and its libraries' files), which the eBPF profile records
/// (`memory_bytes`) and the term prices with the memcalls microbenchmark, whose medians the
/// output keeps; the f_c's `lwk fc` rows are kept too. No timing is asserted.
#[test]
fn issue_15_memcalls_prices_the_bytes_the_profile_records_and_fc_is_the_rewritten_sites() {
    let dir = scratch::Scratch::new("multios-issue15", "memcalls");
    let suite = r#"
[[workload]]
name = "dd"
argv = ["dd", "if=/dev/zero", "of=/dev/null", "bs=16M", "count=1", "status=none"]
"#;
    std::fs::write(dir.join("mem.toml"), suite).expect("write the suite");
    let o = multios(
        &dir,
        &[
            "--json",
            "validate",
            "--suite",
            "mem.toml",
            "--lwk-only",
            "--policy",
            "all",
            "--runs",
            "1",
            "--terms",
            "memcalls",
        ],
    );
    let v = json(&o);
    let p = &v["workloads"][0]["points"][0];
    let mmap = &p["terms"]["memcalls"]["mmap"];
    assert!(mmap["calls"].as_f64().is_some_and(|n| n >= 1.0), "{v}");
    assert!(
        mmap["bytes"].as_f64().is_some_and(|b| b >= (16u64 << 20) as f64),
        "{v}"
    );
    let file = &p["terms"]["memcalls"]["mmap_file"];
    assert!(file["calls"].as_f64().is_some_and(|n| n >= 1.0), "{v}");
    assert!(file["bytes"].as_f64().is_some_and(|b| b > 0.0), "{v}");
    assert!(mmap["per_byte_s"].as_f64().is_some_and(f64::is_finite), "{v}");
    assert!(
        p["per_term"]["memcalls"].as_f64().is_some_and(f64::is_finite),
        "{v}"
    );
    let m = v["term_measurements"].as_array().expect("term_measurements");
    assert!(
        m.iter().any(|m| m["term"] == "memcalls"
            && m["target"] == "lwk"
            && m["numbers"]["lwk.mremap.4096kib_ns"].is_number()
            && m["numbers"]["native.munmap.64kib_ns"].is_number()),
        "{v}"
    );
    let fc = m
        .iter()
        .find(|m| m["term"] == "fc" && m["target"] == "lwk")
        .unwrap_or_else(|| panic!("the f_c's rows: {v}"));
    let one_way = fc["numbers"]["fc_one_way_ns"].as_f64().expect("f_c");
    assert!(
        (p["fc_model_s"].as_f64().expect("fc_model_s") * 1e9 - one_way).abs() < 1e-3,
        "{v}"
    );
    assert!(fc["numbers"]["run0.rewritten_ns"].is_number(), "{v}");
    assert!(fc["numbers"]["run0.crosslink_ns"].is_number(), "{v}");
}

/// `images`: the profile records the images a shell and its children exec'd (schema 5), the
/// microbenchmark prices them (its rows kept in term_measurements), and the JSON shows the term's
/// price and the workload's own image bytes on the LWK's point, with its column. No timing is
/// asserted.
#[test]
fn issue_15_images_prices_each_process_s_image_and_the_json_shows_it() {
    let dir = scratch::Scratch::new("multios-issue15", "images");
    let suite = r#"
[[workload]]
name = "sh-true-busybox"
argv = ["sh", "-c", "/bin/true; busybox true"]
"#;
    std::fs::write(dir.join("img.toml"), suite).expect("write the suite");
    let o = multios(
        &dir,
        &[
            "--json",
            "validate",
            "--suite",
            "img.toml",
            "--lwk-only",
            "--policy",
            "all",
            "--runs",
            "1",
            "--terms",
            "startup,images,procs",
        ],
    );
    let v = json(&o);
    let p = &v["workloads"][0]["points"][0];
    let im = &p["terms"]["images"];
    for k in [
        "fixed_s",
        "per_loaded_byte_s",
        "per_exec_byte_s",
        "per_library_byte_s",
    ] {
        assert!(im["price"][k].as_f64().is_some_and(f64::is_finite), "{k}: {v}");
    }
    // The shell's own image (sh and its ld.so) and the libraries it mapped.
    let b = &im["bytes"];
    assert!(b["loaded"].as_f64().is_some_and(|x| x > 10_000.0), "{v}");
    assert!(b["exec"].as_f64().is_some_and(|x| x > 10_000.0), "{v}");
    assert!(b["libraries"].as_f64().is_some_and(|x| x > 100_000.0), "{v}");
    assert!(
        p["per_term"]["images"].as_f64().is_some_and(f64::is_finite),
        "{v}"
    );
    assert!(p["with_terms"].as_f64().is_some_and(f64::is_finite), "{v}");
    let m = v["term_measurements"].as_array().expect("term_measurements");
    assert!(
        m.iter().any(|m| m["term"] == "images"
            && m["target"] == "lwk"
            && m["numbers"]["static+text.extra_ms"].is_number()
            && m["numbers"]["dynamic+library.library_mib"]
                .as_f64()
                .is_some_and(|x| x > 15.0)
            && m["numbers"]["true.priced_ms"].is_number()),
        "{v}"
    );
}

/// The `wakeup` term priced gap by gap: the profile's gaps decide which spacings `gaps.c` is
/// measured at (the middles of the buckets that hold the delegated calls, not the workload's mean
/// spacing), each policy's point gets T_wakeup over its own delegated calls, and a note says how.
#[test]
fn issue_15_wakeup_is_priced_from_the_profiles_gaps() {
    let dir = scratch::Scratch::new("multios-issue15", "wakeup-gaps");
    let o = multios(
        &dir,
        &[
            "--json",
            "validate",
            "--workload",
            "seq",
            "--mechanism",
            "shm",
            "--policy",
            "all,mckernel",
            "--fc",
            "10us",
            "--runs",
            "1",
            "--terms",
            "wakeup",
            "--",
            "seq",
            "200000",
        ],
    );
    let v = json(&o);
    let w = &v["workloads"][0];
    let notes: Vec<&str> = w["notes"]
        .as_array()
        .map(|a| a.iter().filter_map(|n| n.as_str()).collect())
        .unwrap_or_default();
    for pol in ["all", "mckernel"] {
        let head = format!("wakeup on emulate:shm under {pol}: ");
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with(&head) && n.contains("priced by their gaps")),
            "{notes:?}"
        );
    }
    for p in w["points"].as_array().expect("points") {
        let ws = p["terms"]["wakeup_s"].as_f64().expect("wakeup_s");
        assert!(ws.is_finite() && ws >= 0.0, "{p}");
    }
    // Every wakeup measurement is at a bucket's middle, 2^k·√2 ns to the nearest 100 ns.
    let middles: Vec<u64> = (10..=22)
        .map(|k| ((1u64 << k) as f64 * std::f64::consts::SQRT_2 / 100.0).round() as u64 * 100)
        .collect();
    let m = v["term_measurements"].as_array().expect("term_measurements");
    let gaps: Vec<u64> = m
        .iter()
        .filter(|x| x["term"] == "wakeup")
        .filter_map(|x| x["numbers"]["gap_ns"].as_f64())
        .map(|g| g as u64)
        .collect();
    assert!(
        gaps.iter().all(|g| middles.contains(g)),
        "{gaps:?} not among {middles:?}"
    );
}

/// `validate --workload NAME -- CMD < FILE`: multios's stdin is captured once and every run of the
/// workload reads all of it — the profiled run, both sides of each emulator pair and of each LWK
/// pair — where before this every run read /dev/null and `sort -n < big` was validated on an
/// empty input without a word.
#[test]
fn issue_15_validate_workload_replays_stdin_to_every_run() {
    use std::io::Write;
    let dir = scratch::Scratch::new("multios-issue15", "workload-stdin");
    let log = dir.join("counts.log");
    let input: Vec<u8> = (0..50_000).flat_map(|i| format!("{i}\n").into_bytes()).collect();
    let script = format!("wc -c >> {}", log.display());
    let mut child = Command::new(env!("CARGO_BIN_EXE_multios"))
        .args([
            "--json",
            "validate",
            "--workload",
            "count",
            "--mechanism",
            "shm",
            "--policy",
            "all",
            "--fc",
            "10us",
            "--runs",
            "1",
            "--lwk",
            "--out",
            "out",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .current_dir(&*dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run multios validate");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&input)
        .expect("write stdin");
    let o = child.wait_with_output().expect("multios validate");
    let v = json(&o);
    let counts = std::fs::read_to_string(&log).expect("the runs wrote their counts");
    let counts: Vec<&str> = counts.lines().map(str::trim).collect();
    // One profiled run, a native and an emulated run, a native and an LWK run.
    assert_eq!(counts.len(), 5, "{counts:?}\n{v}");
    let want = input.len().to_string();
    assert!(
        counts.iter().all(|c| *c == want),
        "every run read {want} bytes: {counts:?}"
    );
    let notes = v["workloads"][0]["notes"].to_string();
    assert!(notes.contains(&format!("the same {want} bytes")), "{notes}");
}
