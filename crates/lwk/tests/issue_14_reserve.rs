//! Issue #14, part B.2: `lwk run --reserve` (IHK's reserve cpu/mem), for real on this machine's
//! cpuset hierarchy (cgroup v1 here: cgroup v2 has no cpuset controller on this hybrid system).
//! During a reserved run the guest's thread may run only on the LWK's CPU, no other task of the
//! root cpuset may (init, pid 1, is confined to the other CPUs), and the window is locked
//! (VmLck); a task pinned to that CPU is moved off it and pinned again after. After every kind of end — the program's exit, an LWK error, SIGTERM to the VMM, the
//! guest dying of a fault, SIGKILL of the VMM followed by the next run's sweep — the machine is as
//! before: no reservation cpuset left, the root's load balancing and init's CPUs back. A CPU held
//! by another cpuset, or every CPU, cannot be reserved, with an error that says so. Each
//! reservation lasts well under a second (the machine's other tasks share the remaining CPU
//! meanwhile). Needs root, /dev/kvm, two CPUs and a cpuset hierarchy: FAILS (never skips)
//! without. The tests take a lock: one reservation at a time. Takes ≈ 10 s.

#[path = "common/sidebyside.rs"]
mod sidebyside;

use sidebyside::{require_kvm, show, DEADLINE, RUNNER};
use std::io::{BufRead, BufReader};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The cpuset hierarchy's root and whether it is cgroup v1.
fn cpuset_root() -> (PathBuf, bool) {
    let mounts = std::fs::read_to_string("/proc/mounts").expect("/proc/mounts");
    let mut v2 = None;
    for l in mounts.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() > 3 && f[2] == "cgroup" && f[3].split(',').any(|o| o == "cpuset") {
            return (PathBuf::from(f[1]), true);
        }
        if f.len() > 3 && f[2] == "cgroup2" {
            let ctl = std::fs::read_to_string(Path::new(f[1]).join("cgroup.controllers")).unwrap_or_default();
            if ctl.split_whitespace().any(|c| c == "cpuset") {
                v2 = Some(PathBuf::from(f[1]));
            }
        }
    }
    (
        v2.expect("--reserve tests need a cpuset cgroup hierarchy (v1 or v2 with cpuset); none is mounted"),
        false,
    )
}

/// What a reservation changes, to compare before and after.
#[derive(Debug, PartialEq, Eq)]
struct Machine {
    reservations: Vec<String>,
    load_balance: String,
    init_cpus: String,
}

fn machine() -> Machine {
    let (root, v1) = cpuset_root();
    let mut reservations: Vec<String> = std::fs::read_dir(&root)
        .expect("the cpuset root")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("multios-lwk-reserve-"))
        .collect();
    reservations.sort();
    Machine {
        reservations,
        load_balance: if v1 {
            std::fs::read_to_string(root.join("cpuset.sched_load_balance")).unwrap_or_default()
        } else {
            String::new()
        },
        init_cpus: allowed_of(1),
    }
}

fn allowed_of(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_string())
        .unwrap_or_default()
}

/// (the LWK's CPU, the others) on this machine: the last CPU, as `lwk run`'s partition puts it.
fn split() -> (usize, Vec<usize>) {
    let cpus = multios_lwk::available_cpus();
    assert!(cpus.len() >= 2, "--reserve tests need two CPUs (have {cpus:?})");
    let last = *cpus.last().expect("a CPU");
    (last, cpus.into_iter().filter(|&c| c != last).collect())
}

fn require_root() {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(euid, 0, "--reserve tests need root (cgroups)");
}

/// `lwk-run` with --reserve (LWK_RESERVE) on the LWK's CPU, a 64 MiB window.
fn reserved(args: &[&str]) -> Command {
    let (lwk, _) = split();
    let mut c = Command::new(RUNNER);
    c.env("LWK_RESERVE", "1")
        .env("LWK_MEM_MIB", "64")
        .env("LWK_CPUS", lwk.to_string())
        .args(args);
    c
}

fn run(mut c: Command) -> Output {
    c.stdin(Stdio::null());
    sidebyside::run(c, "a reserved run")
}

#[test]
fn issue_14_a_reserved_run_has_its_cpu_alone_and_locked_memory_and_gives_them_back() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    require_root();
    require_kvm("issue #14");
    let before = machine();
    let (lwk, others) = split();
    // A task of someone else pinned to the LWK's CPU: moved off it for the run, pinned again
    // after (a v1 cpuset move resets affinities).
    let mut pinned = Command::new("sleep");
    pinned.arg("30");
    // SAFETY: sched_setaffinity between fork and exec touches no memory of the parent.
    unsafe {
        pinned.pre_exec(move || {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(lwk, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
            Ok(())
        });
    }
    let mut pinned = pinned.spawn().expect("sleep");
    let pinned_pid = pinned.id() as i32;
    assert_eq!(allowed_of(pinned_pid), lwk.to_string());
    let out = run(reserved(&[
        "/bin/sh",
        "-c",
        "grep Cpus_allowed_list /proc/1/status; cat /proc/self/cpuset; \
         exec grep -E 'Cpus_allowed_list|VmLck' /proc/self/status",
    ]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let lines: Vec<&str> = text.lines().collect();
    let others = multios_host::cpus::format_list(&others);
    // init (and every task that could move) is off the LWK's CPU; the guest is on it alone.
    assert_eq!(
        lines[0].split_whitespace().last(),
        Some(others.as_str()),
        "{text}"
    );
    assert!(lines[1].contains("multios-lwk-reserve-"), "{text}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("Cpus_allowed_list:") && l.ends_with(&format!("\t{lwk}"))),
        "{text}"
    );
    let locked_kb: u64 = lines
        .iter()
        .find_map(|l| l.strip_prefix("VmLck:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    assert!(locked_kb >= 64 * 1024, "the 64 MiB window is locked: {text}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("CPUs {lwk} reserved")), "{err}");
    let repinned = allowed_of(pinned_pid);
    let _ = pinned.kill();
    let _ = pinned.wait();
    assert_eq!(
        repinned,
        lwk.to_string(),
        "a pinned task's affinity after the run"
    );
    assert_eq!(machine(), before, "the machine after a reserved run");
}

#[test]
fn issue_14_a_reservation_is_given_back_after_an_error_a_fault_and_sigterm() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    require_root();
    require_kvm("issue #14");
    let before = machine();
    // An LWK error after the reservation was made: the program does not exist (127, as a
    // shell says for a missing program, since 2026-11-28).
    let out = run(reserved(&["/nonexistent/program"]));
    assert_eq!(out.status.code(), Some(127), "{}", show(&out));
    assert_eq!(machine(), before, "after an LWK error");
    // The guest dies of a fault: the VMM dies of it too, after giving the CPUs back.
    let out = run(reserved(&["/bin/sh", "-c", "kill -SEGV $$"]));
    assert_eq!(out.status.signal(), Some(libc::SIGSEGV), "{}", show(&out));
    assert_eq!(machine(), before, "after a fault");
    // SIGTERM to the VMM while the guest sleeps.
    let mut c = reserved(&["/bin/sh", "-c", "echo ready; exec sleep 30"]);
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("lwk-run");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("ready");
    assert_eq!(line.trim(), "ready");
    // SAFETY: kill with a valid pid and signal has no memory effects.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = wait(&mut child);
    assert_eq!(status.signal(), Some(libc::SIGTERM));
    assert_eq!(machine(), before, "after SIGTERM");
}

fn wait(child: &mut std::process::Child) -> std::process::ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(s) = child.try_wait().expect("wait") {
            return s;
        }
        if t0.elapsed() > DEADLINE {
            // SAFETY: kill of the test's own process group.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            panic!("the reserved run did not end");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn issue_14_the_reservation_of_a_sigkilled_multios_is_swept_at_the_next_start() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    require_root();
    require_kvm("issue #14");
    let before = machine();
    let mut child = reserved(&["/bin/sh", "-c", "echo ready; exec sleep 30"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("lwk-run");
    let pid = child.id() as i32;
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("ready");
    // SAFETY: kill with a valid pid and signal has no memory effects.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    wait(&mut child);
    let left = machine();
    assert_eq!(
        left.reservations.len(),
        if cpuset_root().1 { 2 } else { 1 },
        "{left:?}"
    );
    // The next run, reserved or not, gives the CPUs back first.
    let mut next = Command::new(RUNNER);
    next.arg("/bin/true");
    let out = run(next);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("multios pid {pid}")));
    assert_eq!(machine(), before, "after the sweep");
}

#[test]
fn issue_14_cpus_another_cpuset_holds_or_every_cpu_cannot_be_reserved() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    require_root();
    require_kvm("issue #14");
    let before = machine();
    let (lwk, _) = split();
    // Every CPU: Linux would have none left.
    let all = multios_host::cpus::format_list(&multios_lwk::available_cpus());
    let mut c = reserved(&["/bin/true"]);
    c.env("LWK_CPUS", &all);
    let out = run(c);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{err}");
    assert!(err.contains("would leave Linux no CPU"), "{err}");
    // A cpuset of someone else that holds the LWK's CPU exclusively (v2) or at all (v1).
    let (root, v1) = cpuset_root();
    let other = root.join(format!("multios-test-holder-{}", std::process::id()));
    std::fs::create_dir(&other).expect("a cpuset of our own");
    let mems = std::fs::read_to_string(root.join(if v1 {
        "cpuset.mems"
    } else {
        "cpuset.mems.effective"
    }))
    .unwrap_or_default();
    let setup = if v1 {
        std::fs::write(other.join("cpuset.mems"), mems.trim())
            .and_then(|()| std::fs::write(other.join("cpuset.cpus"), lwk.to_string()))
    } else {
        std::fs::write(other.join("cpuset.cpus.exclusive"), lwk.to_string())
    };
    let out = setup.map(|()| run(reserved(&["/bin/true"])));
    let _ = std::fs::remove_dir(&other);
    let out = out.expect("setting up the other cpuset");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{err}");
    assert!(
        err.contains("could not be isolated") || err.contains("--reserve"),
        "{err}"
    );
    assert!(!v1 || err.contains(&other.display().to_string()), "{err}");
    assert_eq!(machine(), before, "after the refusals");
}
