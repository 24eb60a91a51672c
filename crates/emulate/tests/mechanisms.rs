//! Issue #4: what every mechanism must do — follow fork and exec, deliver the requested cost
//! (constant, exponential, per-syscall), delegate nothing under policy none, refuse f_c below floor.

mod common;
use multios_emulate::bench::DD_SINGLE_BYTES as DD;
use multios_emulate::{CostModel, Delegation, Dist, EmulateError, Exit, Mechanism};

const ALL: [Mechanism; 3] = [Mechanism::Shm, Mechanism::Proxy, Mechanism::Migrate];

#[test]
fn issue_4_fork_and_exec_are_followed_by_every_mechanism() {
    for m in ALL {
        let dir = common::tmpdir(&format!("follow-{}", m.name()));
        let f = dir.join("f");
        // One write comes from a grandchild (sh forks, the child execs sh, which writes), one from an
        // exec'd program (the last command replaces sh). Not `cat`: when stdout is a file, coreutils'
        // cat copies with copy_file_range and makes no write at all, so the count depended on where
        // the test's output went (it failed under CI, whose output is a file).
        let script = format!("sh -c 'echo grandchild > {}'; /bin/echo exec", f.display());
        let d = Delegation::from_fn("write-only", |n| n == "write");
        let r = common::run(m, d, 0.0, &["sh", "-c", &script]);
        assert_eq!(r.exit, Exit::Code(0), "{}: {:?}", m.name(), r.warnings);
        let w = r.syscalls.get("write").map(|c| c.delegated).unwrap_or(0);
        assert!(
            w >= 2,
            "{}: the grandchild's and the exec'd echo's writes must be delegated, saw {w}",
            m.name()
        );
        std::fs::remove_dir_all(dir).ok();
    }
}

#[test]
fn issue_4_policy_none_delegates_nothing() {
    for m in ALL {
        let r = common::run(
            m,
            Delegation::none(),
            0.0,
            &["sh", "-c", "echo x > /dev/null; ls / > /dev/null"],
        );
        assert_eq!(r.exit, Exit::Code(0));
        assert_eq!(r.delegated_total, 0, "{}: {:?}", m.name(), r.syscalls);
        if m != Mechanism::Proxy {
            assert!(
                r.local_total.unwrap_or(0) > 10,
                "{}: local calls must be counted",
                m.name()
            );
        }
    }
}

#[test]
fn issue_4_every_mechanism_delivers_the_constant_cost() {
    for m in ALL {
        let fc = 30e-6;
        let r = common::run(
            m,
            common::named("mckernel"),
            fc,
            &["sh", "-c", "echo x > /dev/null"],
        );
        assert_eq!(r.exit, Exit::Code(0));
        let d = r
            .delivered_fc
            .unwrap_or_else(|| panic!("{}: no delivered costs", m.name()));
        // behaviour only (issue #16): a cost was delivered on every delegated call; how close it is to
        // f_c is `multios bench emulate`'s "delivered f_c" table
        assert!(d.n > 0 && d.min > 0.0 && d.p99.is_finite(), "{}: {d:?}", m.name());
    }
}

#[test]
fn issue_4_exponential_cost_has_the_requested_mean() {
    let mut cfg = common::config(Mechanism::Shm, Delegation::all(), 0.0, &DD);
    cfg.cost = CostModel {
        default: Dist::Exponential { mean: 20e-6 },
        per_syscall: Default::default(),
    };
    let r = multios_emulate::run(&cfg).unwrap_or_else(|e| panic!("{e}"));
    let d = r.delivered_fc.unwrap_or_else(|| panic!("no delivered costs"));
    // Every delegated call paid a drawn cost. Whether the mean is 20 µs and the median 20 µs · ln 2
    // is `multios bench emulate`'s "exponential f_c" row (a timing check: issue #16).
    assert!(d.n > 7000, "{d:?}");
    assert!(d.mean > 0.0 && d.mean.is_finite() && d.p99.is_finite(), "{d:?}");
}

#[test]
fn issue_4_per_syscall_cost_applies_to_that_call_only() {
    let mut cfg = common::config(Mechanism::Shm, Delegation::all(), 0.0, &DD);
    cfg.cost
        .add_override("read=40us")
        .unwrap_or_else(|e| panic!("{e}"));
    let r = multios_emulate::run(&cfg).unwrap_or_else(|e| panic!("{e}"));
    let reads = r.syscalls.get("read").map(|c| c.delegated).unwrap_or(0);
    let d = r.delivered_fc.unwrap_or_else(|| panic!("no delivered costs"));
    // Only reads cost anything (f_c = 0 delivers nothing): two spins per read. Their length is
    // `multios bench emulate`'s "per-syscall f_c" row (issue #16).
    assert_eq!(d.n, 2 * reads, "{d:?}");
    assert!(d.min > 0.0 && d.p99.is_finite(), "{d:?}");
}

#[test]
fn issue_4_an_fc_below_the_floor_is_refused_with_the_floor() {
    let mut cfg = common::config(Mechanism::Proxy, Delegation::all(), 1e-6, &["true"]);
    cfg.allow_below_floor = false;
    match multios_emulate::run(&cfg) {
        Err(e @ EmulateError::BelowFloor { .. }) => {
            let s = e.to_string();
            assert!(
                s.contains("floor of the 'proxy' mechanism") && s.contains("10.00 µs"),
                "{s}"
            );
        }
        other => panic!("expected BelowFloor, got {other:?}"),
    }
}

#[test]
fn issue_4_shared_control_and_compute_cpu_is_a_warning() {
    let mut cfg = common::config(Mechanism::Proxy, Delegation::all(), 0.0, &["true"]);
    cfg.control = cfg.compute.clone();
    let w = cfg.check().unwrap_or_else(|e| panic!("{e}"));
    assert!(w.iter().any(|w| w.contains("overlap")), "{w:?}");
    let r = multios_emulate::run(&cfg).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.exit, Exit::Code(0));
}

#[test]
fn issue_4_thread_context_calls_stay_local_under_shm() {
    let r = common::run(Mechanism::Shm, Delegation::all(), 0.0, &["sh", "-c", "true"]);
    for name in ["rt_sigprocmask", "rt_sigaction", "exit_group", "mmap"] {
        assert!(
            r.forced_local.iter().any(|f| f == name),
            "{name} must be forced local: {:?}",
            r.forced_local
        );
    }
}

#[test]
fn issue_4_default_mechanism_is_shm_for_dynamic_and_proxy_for_static_programs() {
    assert!(
        std::path::Path::new("/bin/busybox").exists(),
        "busybox-static is required (apt-get install busybox-static)"
    );
    assert_eq!(multios_emulate::default_mechanism("busybox"), Mechanism::Proxy);
    assert_eq!(multios_emulate::default_mechanism("sh"), Mechanism::Shm);
}
