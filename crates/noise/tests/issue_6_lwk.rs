//! Issue #6: FTQ and the selfish-detour loop as static guest programs (guest/ftq.c,
//! guest/selfish.c), natively, in the LWK (`multios noise ftq|selfish --lwk`) and under mpirun.
//! Need gcc with a static glibc, /dev/kvm, 2 CPUs and openmpi-bin: they fail loudly otherwise.

use multios_noise::clock::Clock;
use multios_noise::measure::{Kind, Series, Settings};
use multios_noise::{cpustat, guest, report};
use std::path::{Path, PathBuf};

fn settings(kind: Kind) -> Settings {
    Settings {
        kind,
        quantum_ns: 1e6,
        duration_ns: 200e6,
        threshold: 10.0,
        iters_per_tick: None,
    }
}

/// Removed when the test ends (issue #16).
#[path = "../../../testsupport/scratch.rs"]
mod scratch;

fn dir(name: &str) -> PathBuf {
    scratch::until_test_ends("multios-noise", name)
}

/// One LWK at a time per process: its guest memory sits at fixed host addresses
/// (guest-physical == host-virtual), so two concurrent `multios_lwk::run` calls collide.
static LWK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs the program in the LWK (vCPU on CPU 0, proxy on CPU 1) and reads its series.
fn in_lwk(kind: Kind, exe: &Path, s: &Settings, clock: &Clock, out: &Path) -> Series {
    multios_lwk::check_kvm().expect("this test needs /dev/kvm (the LWK runs the program as a KVM guest)");
    let args = guest::args_for(s, clock, out);
    let exe_s = exe.display().to_string();
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut cfg = multios_lwk::Config::new(&exe_s, &argv);
    cfg.backend = multios_lwk::Backend::Ring { proxy_cpu: Some(1) };
    cfg.cpus = vec![0];
    cfg.quiet = true;
    let _one = LWK.lock().unwrap_or_else(|e| e.into_inner());
    let before = cpustat::snapshot(0);
    let o = multios_lwk::run(&cfg).unwrap_or_else(|e| panic!("{kind:?} runs in the LWK: {e}"));
    let after = cpustat::snapshot(0);
    assert_eq!(o.code(), 0, "{:?}", o.notes);
    let mut g = guest::read_series(kind, out, clock, s.quantum_ns, 0).expect("samples written by the guest");
    g.usage = before.zip(after).and_then(|(b, a)| cpustat::usage_guest(&b, &a));
    assert!(g.usage.is_some(), "others % from /proc/stat's guest time");
    g
}

fn native(kind: Kind, exe: &Path, s: &Settings, clock: &Clock, out: &Path) -> Series {
    let args = guest::args_for(s, clock, out);
    let g = guest::run_native_kind(kind, exe, 0, &args, clock, s.quantum_ns).expect("runs on CPU 0");
    assert_eq!(g.ran_on, Some(0), "pinned to CPU 0");
    assert!(
        g.usage.is_some(),
        "others % from /proc/stat and the child's rusage"
    );
    g
}

fn check_ftq(g: &Series) {
    assert_eq!(g.kind, Kind::Ftq);
    assert_eq!(g.samples.len(), 200, "one sample per 1 ms slot of 200 ms");
    // behaviour only (issue #16); the unit's length, the units per slot and the elapsed time against
    // their targets are `multios bench noise --quanta`'s
    assert!(
        g.unit_ns > 0.0 && g.unit_ns.is_finite(),
        "work unit {} ns",
        g.unit_ns
    );
    let max = g.samples.iter().map(|x| x.1).fold(0.0, f64::max);
    assert!(max > 0.0, "no work unit completed in any slot");
    assert!(
        g.elapsed_ns > 0.0 && g.elapsed_ns.is_finite(),
        "elapsed {} ns",
        g.elapsed_ns
    );
    let r = report::report("t", g);
    assert_eq!(r.samples, 200);
    assert!((0.0..=100.0).contains(&r.noise_pct));
    assert!(r.peaks.len() <= 8 && r.peaks.iter().all(|p| p.freq_hz > 0.0 && p.freq_hz <= 500.0));
}

fn check_selfish(g: &Series) {
    assert_eq!(g.kind, Kind::Selfish);
    assert!(
        g.min_iteration_ns > 0.0 && g.min_iteration_ns.is_finite(),
        "shortest iteration {} ns",
        g.min_iteration_ns
    );
    assert!(
        g.elapsed_ns > 0.0 && g.elapsed_ns.is_finite(),
        "elapsed {} ns",
        g.elapsed_ns
    );
    let thr = 10.0 * g.min_iteration_ns;
    assert!(g.samples.iter().all(|x| x.1 > thr * 0.99 && x.0 <= g.elapsed_ns));
    assert_eq!(g.detours.len(), g.samples.len());
    let r = report::report("t", g);
    assert!((0.0..=100.0).contains(&r.noise_pct));
}

#[test]
fn issue_6_ftq_guest_program_runs_natively_and_in_the_lwk() {
    let clock = Clock::calibrate(20);
    let d = dir("ftq-test");
    let exe = guest::build_for(&d, Kind::Ftq).expect("gcc -static builds guest/ftq.c");
    let s = settings(Kind::Ftq);
    let out = d.join("ftq.out");
    check_ftq(&native(Kind::Ftq, &exe, &s, &clock, &out));
    check_ftq(&in_lwk(Kind::Ftq, &exe, &s, &clock, &out));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn issue_6_selfish_guest_program_runs_natively_and_in_the_lwk() {
    let clock = Clock::calibrate(20);
    let d = dir("selfish-test");
    let exe = guest::build_for(&d, Kind::Selfish).expect("gcc -static builds guest/selfish.c");
    let s = settings(Kind::Selfish);
    let out = d.join("selfish.out");
    check_selfish(&native(Kind::Selfish, &exe, &s, &clock, &out));
    check_selfish(&in_lwk(Kind::Selfish, &exe, &s, &clock, &out));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn issue_6_ftq_and_selfish_on_every_rank_under_mpirun() {
    let clock = Clock::calibrate(20);
    for kind in [Kind::Ftq, Kind::Selfish] {
        let d = dir(&format!("mpi-{kind:?}-test"));
        let exe = guest::build_for(&d, kind).expect("gcc -static builds the guest program");
        let s = settings(kind);
        let args = guest::args_for(&s, &clock, &d.join("samples.out"));
        let ranks = guest::run_mpirun_kind(kind, &exe, 2, &args, &clock, s.quantum_ns)
            .expect("Open MPI's mpirun runs the program on 2 ranks (install openmpi-bin)");
        assert_eq!(ranks.len(), 2);
        assert_ne!(ranks[0].cpu, ranks[1].cpu, "one rank per core");
        for g in &ranks {
            match kind {
                Kind::Ftq => check_ftq(g),
                _ => check_selfish(g),
            }
        }
        let _ = std::fs::remove_dir_all(&d);
    }
}
