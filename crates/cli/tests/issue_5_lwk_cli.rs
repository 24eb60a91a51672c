//! Issue #5 through the CLI with a real HPC code: LAMMPS (Debian's lammps, linked with Open MPI)
//! runs as MPI ranks inside the LWK, one VM per rank, and prints the same thermodynamics as
//! natively. Needs /dev/kvm, lammps and openmpi-bin; fails loudly without them.

use std::process::{Command, Output};

/// A Lennard-Jones melt: 4000 atoms, 100 steps, thermo every 50.
const MELT: &str = "units lj\natom_style atomic\nlattice fcc 0.8442\nregion box block 0 10 0 10 0 10\n\
create_box 1 box\ncreate_atoms 1 box\nmass 1 1.0\nvelocity all create 3.0 87287 loop geom\n\
pair_style lj/cut 2.5\npair_coeff 1 1 1.0 1.0 2.5\nneighbor 0.3 bin\nneigh_modify every 20 delay 0 check no\n\
fix 1 all nve\nthermo 50\nrun 100\n";

#[path = "../../../testsupport/scratch.rs"]
mod scratch;

fn thermo(o: &Output) -> Vec<String> {
    let text = String::from_utf8_lossy(&o.stdout);
    let mut rows: Vec<String> = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("Step"))
        .take_while(|l| !l.starts_with("Loop time"))
        .map(str::to_string)
        .collect();
    rows.retain(|l| !l.trim().is_empty());
    rows
}

fn mpirun(ranks: &str, lwk: bool, input: &std::path::Path) -> Output {
    let mut c = Command::new("mpirun.openmpi");
    c.args(["--allow-run-as-root", "--oversubscribe", "-n", ranks]);
    if lwk {
        c.args([env!("CARGO_BIN_EXE_multios"), "lwk", "run", "--"]);
    }
    c.arg("lmp").arg("-in").arg(input).args(["-log", "none"]);
    c.output()
        .unwrap_or_else(|e| panic!("cannot run mpirun.openmpi (Debian packages openmpi-bin, lammps): {e}"))
}

#[test]
fn issue_5_lammps_mpi_ranks_run_in_the_lwk() {
    assert!(
        std::path::Path::new("/dev/kvm").exists(),
        "/dev/kvm is missing: the LWK tests need KVM"
    );
    let dir = scratch::Scratch::new("multios-lwk", "lammps");
    let input = dir.join("melt.in");
    std::fs::write(&input, MELT).expect("write the LAMMPS input");
    for ranks in ["1", "2"] {
        let native = mpirun(ranks, false, &input);
        let lwk = mpirun(ranks, true, &input);
        assert!(
            native.status.success(),
            "native lmp: {}",
            String::from_utf8_lossy(&native.stderr)
        );
        assert!(
            lwk.status.success(),
            "lmp in the LWK at {ranks} ranks: {}",
            String::from_utf8_lossy(&lwk.stderr)
        );
        let (n, l) = (thermo(&native), thermo(&lwk));
        assert!(n.len() >= 3, "no thermo output natively: {n:?}");
        assert_eq!(n, l, "thermodynamics differ at {ranks} ranks");
    }
}

#[test]
fn issue_5_lwk_validate_reports_model_and_measurement_side_by_side() {
    assert!(
        std::path::Path::new("/dev/kvm").exists(),
        "/dev/kvm is missing: the LWK tests need KVM"
    );
    let o = Command::new(env!("CARGO_BIN_EXE_multios"))
        .args([
            "lwk",
            "validate",
            "--intensity",
            "1",
            "--phases",
            "20",
            "--repeat",
            "1",
            "--json",
        ])
        .output()
        .expect("run multios lwk validate");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    let point = &v["points"][0];
    for key in [
        "p",
        "native_s",
        "lwk_s",
        "measured",
        "measured_raw",
        "interrupted_native_pct",
        "interrupted_lwk_pct",
        "naive",
        "refined",
        "accuracy_refined",
    ] {
        assert!(
            point[key].as_f64().is_some_and(f64::is_finite),
            "{key} in {point}"
        );
    }
    assert!(v["gamma"].as_f64().is_some_and(|g| g > 0.0), "{v}");
    // issue 15: the raw accuracy (interrupted phases kept) beside the filtered one
    assert!(
        v["accuracy_refined_raw"].as_f64().is_some_and(f64::is_finite),
        "{v}"
    );
    // issue 15: each repeat with its own projection and the cross-CPU level it saw (the probe's
    // median round trip between the vCPU's CPU and the proxy's), and the old scoring beside
    let rep = &point["repeats"][0];
    for key in ["measured", "refined"] {
        assert!(rep[key].as_f64().is_some_and(|x| x > 0.0), "{key} in {rep}");
    }
    assert!(
        rep["level"]["level_ns"].as_f64().is_some_and(|ns| ns > 0.0),
        "the level of a repeat on two CPUs: {rep}"
    );
    assert!(
        rep["level"]["probes_ns"].as_array().is_some_and(|p| p.len() >= 5),
        "{rep}"
    );
    assert!(
        v["accuracy_refined_medians"].as_f64().is_some_and(f64::is_finite),
        "{v}"
    );
    // issue 15: where a repeat's error comes from — its LWK calls against its calls-only inputs,
    // and the LWK's thread times of its measured and calls-only runs
    for key in [
        "lwk_calls_s",
        "lwk_calls_from_inputs_s",
        "lwk_compute_s",
        "lwk_compute_from_native_s",
    ] {
        assert!(
            rep["split"][key].as_f64().is_some_and(|x| x > 0.0),
            "split.{key} in {rep}"
        );
    }
    assert!(
        rep["threads"][0]["vcpu_run_s"].as_f64().is_some_and(|x| x > 0.0),
        "the measured LWK run's vCPU time in {rep}"
    );
    assert!(
        v["inputs"][0]["per_call_lwk_s"]["write"]
            .as_f64()
            .is_some_and(|t| t > 0.0),
        "the LWK's per-call cost of write is an input: {v}"
    );
}

#[test]
fn issue_5_hpcc_runs_in_the_lwk_and_bench_hpcc_reports_every_kernel() {
    assert!(
        std::path::Path::new("/dev/kvm").exists(),
        "/dev/kvm is missing: the LWK tests need KVM"
    );
    // One pair of HPC Challenge runs (Debian's hpcc, Open MPI), natively and in the LWK: both must
    // pass hpcc's own checks (Success=1, else the bench fails) and report every kernel.
    let o = Command::new(env!("CARGO_BIN_EXE_multios"))
        .args(["bench", "hpcc", "--runs", "1", "--n", "1000", "--json"])
        .output()
        .expect("run multios bench hpcc");
    assert!(
        o.status.success(),
        "multios bench hpcc (needs Debian packages hpcc, openmpi-bin): {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    let rows = v.as_array().expect("one row per kernel");
    assert_eq!(rows.len(), 6, "{v}");
    for r in rows {
        for side in ["native", "lwk"] {
            assert!(
                r[side][0].as_f64().is_some_and(|x| x > 0.0),
                "{side} {} in {r}",
                r["metric"]
            );
        }
    }
}

/// A guest mmap larger than the application window gets ENOMEM, as an LWK with a fixed partition
/// answers, and `lwk run` says once why and what to change (it said nothing: a 5 GiB bytearray
/// raised MemoryError in the LWK, where natively it fit); with a larger --mem-mib it fits.
#[test]
fn issue_5_an_mmap_beyond_the_window_is_named_with_the_flag_that_fixes_it() {
    let prog = "b = bytearray(96 << 20); b[-1] = 1; print(len(b))";
    let run = |mib: &str| {
        Command::new(env!("CARGO_BIN_EXE_multios"))
            .args(["lwk", "run", "--mem-mib", mib, "--", "python3", "-c", prog])
            .output()
            .expect("run multios lwk run")
    };
    let small = run("64");
    let err = String::from_utf8_lossy(&small.stderr);
    assert_eq!(small.status.code(), Some(1), "{err}");
    assert!(err.contains("MemoryError"), "{err}");
    assert_eq!(err.matches("--mem-mib").count(), 1, "said once: {err}");
    assert!(err.contains("found no room in the guest's 64 MiB"), "{err}");
    let big = run("512");
    assert!(big.status.success(), "{}", String::from_utf8_lossy(&big.stderr));
    assert_eq!(String::from_utf8_lossy(&big.stdout), format!("{}\n", 96 << 20));
}
