//! Issue #6 regression tests that measure for real on this machine (root and ≥ 2 CPUs needed for
//! the load placement tests: they fail loudly when that is not so).

use multios_noise::clock::Clock;
use multios_noise::cpus;
use multios_noise::load::{Isolation, Load, LoadSpec};
use multios_noise::measure::{self, Kind, MeasureError, Settings};
use multios_noise::report;
use std::time::Duration;

#[path = "../../../testsupport/scratch.rs"]
mod scratch;

fn settings(kind: Kind, quantum_ns: f64, duration_ns: f64) -> Settings {
    Settings {
        kind,
        quantum_ns,
        duration_ns,
        threshold: 10.0,
        iters_per_tick: None,
    }
}

#[test]
fn issue_6_fwq_runs_on_cpu0_for_real() {
    let clock = Clock::calibrate(20);
    assert!(clock.ticks_per_ns > 0.0 && clock.resolution_ns > 0.0, "{clock:?}");
    let s = settings(Kind::Fwq, 200_000.0, 300e6);
    let runs = measure::run_on(&[0], &s, &clock).expect("FWQ on CPU 0");
    assert_eq!(runs.len(), 1);
    let r = &runs[0];
    assert_eq!(r.ran_on, Some(0), "the thread must stay pinned to CPU 0");
    // Behaviour only (issue #16): it measured something. How long it ran, how many quanta fitted and
    // how close the quantum is to its target are timings: `multios bench noise --quanta`.
    assert!(
        r.elapsed_ns > 0.0 && r.elapsed_ns.is_finite(),
        "{} ns",
        r.elapsed_ns
    );
    assert!(!r.samples.is_empty());
    let usage = r.usage.expect("/proc/stat is readable");
    assert!((0.0..=100.0).contains(&usage.others_pct), "{usage:?}");
    let rep = report::report("idle", r);
    let sum = rep.summary.expect("samples");
    assert!(sum.min > 0.0, "{sum:?}");
    assert!(
        sum.min <= sum.median && sum.median <= sum.max && sum.noise_pct >= 0.0,
        "{sum:?}"
    );
    let trace = report::trace_of(r);
    assert!(trace.length_ns > 0.0, "{}", trace.length_ns);
}

#[test]
fn issue_6_ftq_and_selfish_run_for_real() {
    let clock = Clock::calibrate(20);
    let ftq = measure::run_on(&[0], &settings(Kind::Ftq, 100_000.0, 200e6), &clock).expect("FTQ");
    assert_eq!(ftq[0].samples.len(), 2000);
    assert!(ftq[0].samples.iter().any(|x| x.1 > 0.0));
    let sd = measure::run_on(&[0], &settings(Kind::Selfish, 0.0, 200e6), &clock).expect("selfish");
    assert!(
        sd[0].min_iteration_ns > 0.0 && sd[0].min_iteration_ns.is_finite(),
        "{}",
        sd[0].min_iteration_ns
    );
    // a 200 ms loop on a Linux CPU always sees at least a timer tick
    assert!(!sd[0].detours.is_empty(), "no detour in 200 ms");
}

#[test]
fn issue_6_offline_cpu_is_an_error_naming_the_online_set() {
    let clock = Clock::calibrate(5);
    let online = cpus::online().expect("online CPUs");
    let e = measure::run_on(&[4095], &settings(Kind::Fwq, 100_000.0, 1e6), &clock).expect_err("CPU 4095");
    let msg = e.to_string();
    assert!(
        msg.contains("CPU 4095 is not online") && msg.contains(&cpus::format_list(&online)),
        "{msg}"
    );
}

#[test]
fn issue_6_quantum_below_timer_resolution_is_an_error() {
    let clock = Clock::calibrate(5);
    let q = clock.resolution_ns / 2.0;
    let e = measure::run_on(&[0], &settings(Kind::Fwq, q, 1e6), &clock).expect_err("tiny quantum");
    assert!(matches!(e, MeasureError::BelowResolution { .. }), "{e}");
    assert!(e.to_string().contains("timer resolution"), "{e}");
}

fn need_two_cpus() -> Vec<usize> {
    let online = cpus::online().expect("online CPUs");
    assert!(
        online.len() >= 2,
        "this test needs ≥ 2 online CPUs to place a load away from CPU 0; online: {online:?}"
    );
    online
}

fn allowed_cpus(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("load status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|s| s.trim().to_string())
        .expect("Cpus_allowed_list")
}

/// Processes whose process group is `pgid`.
fn group_members(pgid: u32) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // fields after the ") " that ends the command name: state ppid pgrp …
        let rest = stat.rsplit_once(") ").map(|x| x.1).unwrap_or("");
        let f: Vec<&str> = rest.split_whitespace().collect();
        // a killed orphan is a zombie until init reaps it: it runs no more
        if f.len() > 2 && f[0] != "Z" && f[2].parse::<u32>().ok() == Some(pgid) {
            v.push(pid);
        }
    }
    v
}

fn gone(pid: u32) -> bool {
    // a reaped process has no /proc entry (a zombie would still show one)
    !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn issue_6_load_pinned_by_affinity_and_killed_with_its_group() {
    let online = need_two_cpus();
    let other = cpus::others(&[0], &online).expect("another CPU");
    let spec = LoadSpec {
        command: "sleep 1000 & sleep 1000".into(),
        isolation: Isolation::Affinity,
        cpus: other.clone(),
    };
    let load = Load::start(&spec, Duration::from_millis(100)).expect("start load");
    let pid = load.pid();
    assert_eq!(allowed_cpus(pid), cpus::format_list(&other));
    let members = group_members(pid);
    assert!(
        members.len() >= 2,
        "the shell and its background sleep: {members:?}"
    );
    for m in &members {
        assert_eq!(
            allowed_cpus(*m),
            cpus::format_list(&other),
            "descendant {m} inherits the pinning"
        );
    }
    load.stop().expect("stop");
    assert!(gone(pid), "load {pid} still exists after stop");
    assert!(
        group_members(pid).is_empty(),
        "the whole process group is killed: {:?}",
        group_members(pid)
    );
}

#[test]
fn issue_6_cpuset_cgroup_is_created_and_removed() {
    let online = need_two_cpus();
    // the effective uid, from /proc
    let status = std::fs::read_to_string("/proc/self/status").expect("status");
    let uid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .unwrap_or("")
        .split_whitespace()
        .next();
    assert_eq!(
        uid,
        Some("0"),
        "creating a cpuset cgroup needs root; run the tests as root"
    );
    let other = cpus::others(&[0], &online).expect("another CPU");
    let spec = LoadSpec {
        command: "sleep 1000".into(),
        isolation: Isolation::Cpuset,
        cpus: other.clone(),
    };
    let load = Load::start(&spec, Duration::from_millis(100)).expect("start load in a cpuset");
    let pid = load.pid();
    assert_eq!(
        load.cpuset_cpus().as_deref(),
        Some(cpus::format_list(&other).as_str())
    );
    let cg = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).expect("cgroup of the load");
    assert!(
        cg.contains(&format!("multios-noise-{}", std::process::id())),
        "{cg}"
    );
    assert_eq!(allowed_cpus(pid), cpus::format_list(&other));
    load.stop().expect("stop");
    assert!(gone(pid));
    let dirs = std::fs::read_to_string("/proc/mounts").expect("mounts");
    let prefix = format!("multios-noise-{}-", std::process::id());
    for line in dirs.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() > 2 && (f[2] == "cgroup" || f[2] == "cgroup2") {
            for e in std::fs::read_dir(f[1]).expect("cgroup dir").flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                assert!(!name.starts_with(&prefix), "{} left behind", e.path().display());
            }
        }
    }
}

#[test]
fn issue_6_a_load_that_fails_at_once_is_reported() {
    let spec = LoadSpec {
        command: "echo broken >&2; exit 3".into(),
        isolation: Isolation::None,
        cpus: vec![],
    };
    let e = Load::start(&spec, Duration::from_millis(300)).expect_err("exits at once");
    let msg = e.to_string();
    assert!(msg.contains("exited") && msg.contains("broken"), "{msg}");
}

#[test]
fn issue_6_fwq_guest_program_builds_and_runs_natively() {
    let clock = Clock::calibrate(20);
    let dir = scratch::Scratch::new("multios-noise-test", "fwq");
    let exe = multios_noise::guest::build(&dir).expect("gcc -static builds guest/fwq.c");
    let out = dir.join("fwq.out");
    let args = multios_noise::guest::args(200_000.0, 100e6, &clock, &out);
    let s = multios_noise::guest::run_native(&exe, 0, &args, &clock, 200_000.0).expect("runs on CPU 0");
    assert_eq!(s.samples.len(), 500);
    // the quantum's length against its target is `multios bench noise --quanta`'s (issue #16)
    assert!(s.samples.iter().all(|x| x.1 > 0.0 && x.1.is_finite()));
}

#[test]
fn issue_6_fwq_runs_as_an_lwk_guest() {
    multios_lwk::check_kvm().expect("this test needs /dev/kvm (the LWK runs FWQ as a KVM guest)");
    let clock = Clock::calibrate(20);
    let dir = scratch::Scratch::new("multios-noise-lwk-test", "fwq");
    let exe = multios_noise::guest::build(&dir).expect("gcc -static builds guest/fwq.c");
    let out = dir.join("fwq.out");
    let args = multios_noise::guest::args(200_000.0, 100e6, &clock, &out);
    let exe_s = exe.display().to_string();
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut cfg = multios_lwk::Config::new(&exe_s, &argv);
    cfg.quiet = true;
    let o = multios_lwk::run(&cfg).expect("FWQ runs in the LWK");
    assert_eq!(o.code(), 0, "{:?}", o.notes);
    let s =
        multios_noise::guest::read_output(&out, &clock, 200_000.0, 1).expect("samples written by the guest");
    assert_eq!(s.samples.len(), 500);
    assert!(s.samples.iter().all(|x| x.1 > 0.0 && x.1.is_finite()));
}

#[test]
fn issue_6_trace_file_with_a_bad_line_names_file_and_line() {
    let dir = scratch::Scratch::new("multios-noise-test", "trace");
    let path = dir.join("bad.trace");
    std::fs::write(&path, "# length_ns 1000000\n10 5\n20 7\nthirty 5\n").expect("write trace");
    let e = multios_noise::NoiseTrace::load(&path).expect_err("bad line 4");
    let msg = e.to_string();
    assert!(msg.starts_with(&format!("{}:4:", path.display())), "{msg}");
}

#[test]
fn issue_6_fwq_on_every_rank_under_mpirun() {
    let online = need_two_cpus();
    let clock = Clock::calibrate(20);
    let dir = scratch::Scratch::new("multios-noise-mpi-test", "fwq");
    let exe = multios_noise::guest::build(&dir).expect("gcc -static builds guest/fwq.c");
    let args = multios_noise::guest::args(200_000.0, 50e6, &clock, &dir.join("fwq.out"));
    let ranks = multios_noise::guest::run_mpirun(&exe, 2, &args, &clock, 200_000.0)
        .expect("Open MPI's mpirun runs FWQ on 2 ranks (install openmpi-bin)");
    assert_eq!(ranks.len(), 2);
    let cpus_used: Vec<usize> = ranks.iter().map(|s| s.cpu).collect();
    assert!(
        cpus_used[0] != cpus_used[1] && cpus_used.iter().all(|c| online.contains(c)),
        "{cpus_used:?}"
    );
    for s in &ranks {
        assert_eq!(s.samples.len(), 250);
    }
    let merged = report::merge(&ranks).expect("two ranks");
    assert_eq!(merged.samples.len(), 500);
    assert!(merged.samples.windows(2).all(|w| w[0].0 <= w[1].0));
}
