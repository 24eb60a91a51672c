//! Issue #15: the SCHED_IDLE spinners that keep CPUs from halting during delegated calls. proxy
//! keeps one on each compute CPU, migrate one on each compute and control CPU (since its spinners
//! exit to the hypervisor: docs/EMULATOR.md), shm none; `--no-idle-spin` removes them. That the spinner enters the kernel on
//! each turn (a spinner of pure `pause`s made every proxy call cost ≈ 1.3 ms on this VM) is a
//! matter of time, so `multios fc` shows it (docs/BENCHMARKS.md), not this test: this VM's
//! user/system split of a thread's ticks does not tell the two loops apart. Needs root and 2 CPUs.

use std::process::{Command, Stdio};

const SCHED_IDLE: u32 = 5;

/// (policy, utime, stime) of every thread of the `multios emulate` process, read by the program it
/// runs (its parent) after 300 ms of sleep, every call delegated.
fn parent_threads(mechanism: &str, extra: &[&str]) -> Vec<(u32, u64, u64)> {
    threads_under(mechanism, "all", extra)
}

/// [`parent_threads`] under `policy`.
fn threads_under(mechanism: &str, policy: &str, extra: &[&str]) -> Vec<(u32, u64, u64)> {
    let mut args = vec![
        "emulate",
        "--mechanism",
        mechanism,
        "--policy",
        policy,
        "--fc",
        "0us",
        "--allow-below-floor",
    ];
    args.extend_from_slice(extra);
    args.extend(["--", "sh", "-c", "sleep 0.3; cat /proc/$PPID/task/*/stat"]);
    let o = Command::new(env!("CARGO_BIN_EXE_multios"))
        .args(&args)
        .stdin(Stdio::null())
        .output()
        .expect("run multios emulate");
    assert!(
        o.status.success(),
        "multios emulate --mechanism {mechanism} {extra:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8_lossy(&o.stdout);
    let threads: Vec<(u32, u64, u64)> = text
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l[l.rfind(')')? + 1..].split_whitespace().collect();
            Some((
                f.get(38)?.parse().ok()?,
                f.get(11)?.parse().ok()?,
                f.get(12)?.parse().ok()?,
            ))
        })
        .collect();
    assert!(!threads.is_empty(), "no thread of multios read: {text}");
    threads
}

fn spinners(t: &[(u32, u64, u64)]) -> Vec<(u32, u64, u64)> {
    t.iter().copied().filter(|&(p, _, _)| p == SCHED_IDLE).collect()
}

#[test]
fn issue_15_the_proxy_keeps_a_kernel_entering_idle_spinner() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(
        cpus >= 2,
        "this test needs 2 CPUs (compute and control), found {cpus}"
    );
    let s = spinners(&parent_threads("proxy", &[]));
    assert!(!s.is_empty(), "proxy: no SCHED_IDLE spinner on the compute CPU");
    let none = spinners(&parent_threads("proxy", &["--no-idle-spin"]));
    assert!(none.is_empty(), "proxy --no-idle-spin: {none:?}");
    let s = spinners(&parent_threads("shm", &[]));
    assert!(s.is_empty(), "shm keeps no spinner: {s:?}");
}

#[test]
fn issue_15_migrate_keeps_a_spinner_on_its_compute_and_its_control_cpu() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(
        cpus >= 2,
        "this test needs 2 CPUs (compute and control), found {cpus}"
    );
    // Without them each move of the thread woke a halted CPU; with `cpuid` exits every 20 µs a
    // CPU that never halts still takes its interrupts (`multios_host::hvexit`).
    let s = spinners(&parent_threads("migrate", &[]));
    assert_eq!(
        s.len(),
        2,
        "migrate: one spinner on the compute and one on the control CPU: {s:?}"
    );
    let none = spinners(&parent_threads("migrate", &["--no-idle-spin"]));
    assert!(none.is_empty(), "migrate --no-idle-spin: {none:?}");
}

/// The `startup` and `startup-own` terms are measured with one call the program never makes
/// delegated (`kexec_load`), so that its calls' round trips, which the model charges per call,
/// are not counted twice. That only measures the start-up if the mechanism still sets itself up
/// in full: the proxy keeps its supervisor's spinner under such a policy (an empty policy would
/// install nothing).
#[test]
fn issue_15_the_start_up_policy_still_sets_the_proxy_up() {
    let dir = std::env::temp_dir().join(format!("multios-intercept-only-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let list = dir.join("calls");
    std::fs::write(&list, "kexec_load\n").expect("write the policy file");
    let policy = format!("list:{}", list.display());
    let s = spinners(&threads_under("proxy", &policy, &[]));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        !s.is_empty(),
        "proxy under {policy}: no spinner, so the mechanism was not set up"
    );
}
