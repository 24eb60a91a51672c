//! Issue #4 through the CLI: `multios validate` sweeps and scores configurations with the round
//! trip measured next to each configuration's runs, and the pass-through benchmark compares runs
//! pair by pair and measures the start-up cost on its own (functional checks: the numbers
//! themselves are the benchmarks', docs/BENCHMARKS.md).

use std::process::Command;

#[path = "../../../testsupport/scratch.rs"]
mod scratch;

fn multios(args: &[&str]) -> serde_json::Value {
    let o = Command::new(env!("CARGO_BIN_EXE_multios"))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run multios {args:?}: {e}"));
    assert!(
        o.status.success(),
        "multios {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("JSON on stdout")
}

#[test]
fn issue_4_validate_scores_every_configuration_with_its_own_round_trip() {
    let out = scratch::Scratch::new("multios-issue4", "validate");
    let v = multios(&[
        "validate",
        "--json",
        "--mechanism",
        "shm",
        "--gamma",
        "1,2",
        "--policy",
        "mckernel",
        "--fc",
        "5us",
        "--iters",
        "20000",
        "--phases",
        "3",
        "--repeat",
        "2",
        "--out",
        out.to_str().expect("UTF-8 temp dir"),
    ]);
    let points = v["points"].as_array().expect("points");
    assert_eq!(points.len(), 2, "γ 1, 2 × one policy × one f_c: {v}");
    for p in points {
        for key in ["measured", "naive", "refined_median", "refined_mean", "accuracy"] {
            assert!(p[key].as_f64().is_some_and(f64::is_finite), "{key} in {p}");
        }
    }
    assert!(v["accuracy_median"].as_f64().is_some_and(f64::is_finite), "{v}");
    assert!(out.join("validate-speedup.png").exists());
}

#[test]
fn issue_4_bench_emulate_pairs_runs_and_resolves_the_bzip2_start_up_cost() {
    let v = multios(&[
        "bench",
        "emulate",
        "--json",
        "--runs",
        "6",
        "--startup-runs",
        "6",
        "--bzip2-mib",
        "1",
    ]);
    let pass = v["passthrough"].as_array().expect("passthrough");
    assert!(!pass.is_empty(), "{v}");
    for o in pass {
        assert_eq!(o["cpu"]["pairs"], 6, "{o}");
        // Six pairs are the fewest with a 95 % interval for the median (1 − 2/64 = 96.9 %).
        assert!(o["cpu"]["ci"].is_array(), "{o}");
        assert!(o["cpu"]["median"].as_f64().is_some_and(f64::is_finite), "{o}");
        if o["mechanism"] != "proxy" {
            assert!(o["calls"].as_u64().is_some_and(|n| n > 0), "{o}");
        }
    }
    let startup = v["startup"].as_array().expect("startup");
    assert_eq!(startup.len(), pass.len() / 2, "one per mechanism: {v}");
    for f in startup {
        // The start-up cost of the interception is a few ms at most, never seconds.
        let d = f["cpu"]["median"].as_f64().expect("median");
        assert!(d.abs() < 0.1, "{f}");
    }
}
