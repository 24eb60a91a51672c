//! Issue #11: IMS is a synchronous call into the Machine Manager. A machine that holds no core
//! when a request reaches it is activated by its manager: granted a CPU whose holder sleeps, or
//! handed one when a holder runs out of work; no activation is lost under many round trips
//! between machines that share one CPU.

use multios_aam::manager::{move_core, MachineManager, MoveCause, Policy};
use multios_aam::{block_on, yield_now, ConnectOptions, MachineBuilder, MachineSignal, ServeOptions};
use multios_host::CpuSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn two() -> (usize, usize) {
    let c = CpuSet::allowed().to_vec();
    assert!(c.len() >= 2, "these tests need two usable CPUs, have {c:?}");
    (c[0], c[c.len() - 1])
}

/// Waits for `f` on another thread; fails after a minute instead of hanging.
fn within_a_minute<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{what}: no result after 60 s (a lost activation)"))
}

fn until(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{what}: not after 60 s"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Machine `name` with a worker on both CPUs, holding `active` only, recording its signals.
fn machine(
    name: &'static str,
    both: &CpuSet,
    active: &[usize],
    seen: &Arc<Mutex<Vec<MachineSignal>>>,
) -> multios_aam::Machine {
    let s = seen.clone();
    MachineBuilder::new(name)
        .cpus(both.clone())
        .active_cpus(CpuSet(active.iter().copied().collect()))
        .idle_spin(Duration::from_micros(20))
        .trace(1000)
        .on_signal(move |sig| s.lock().unwrap_or_else(|e| e.into_inner()).push(sig.clone()))
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}

struct Twice;

/// A machine without a core, asleep holder: the sender's IMS makes the manager grant it a CPU in
/// the sender's call; the machine's buffer gets the `Messages` signal.
#[test]
fn issue_11_ims_grants_a_core_to_a_machine_that_holds_none() {
    let (c0, c1) = two();
    let both = CpuSet([c0, c1].into());
    let seen_a = Arc::new(Mutex::new(Vec::new()));
    let seen_b = Arc::new(Mutex::new(Vec::new()));
    let a = machine("a", &both, &[c0], &seen_a);
    let b = machine("b", &both, &[c1], &seen_b);
    // The client connects while a still holds its core: registering an interface signals the
    // machine, and that signal would get a core of its own if a held none (then the call below
    // could find a polling and need no IMS).
    let ep = a
        .serve(Twice, ServeOptions::default())
        .connect(ConnectOptions::default());
    until("a's registration handled", || {
        seen_a
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|s| matches!(s, MachineSignal::InterfaceRegistered { .. }))
    });
    // a's only core goes to b: a holds none.
    move_core(c0, &a.handle(), &b.handle()).unwrap_or_else(|e| panic!("{e}"));
    let ha = a.handle();
    until("a's worker leaving", || ha.serving_cpus().is_empty());
    // The policy thread never acts during the test (a period of an hour): only IMS can help.
    let manager = MachineManager::start(
        vec![a.handle(), b.handle()],
        Policy::Utilization,
        Duration::from_secs(3600),
    );
    let r = within_a_minute("a call to a machine without a core", move || {
        ep.call("Twice::of", |_t| async { 21 * 2 }).wait()
    });
    assert_eq!(r, Ok(42));
    let st = a.stats();
    assert!(st.ims_calls >= 1 && st.ims_without_core >= 1, "{st:?}");
    assert_eq!(a.active_cpus().len(), 1, "a got one core");
    let moves = manager.moves();
    assert!(
        moves
            .iter()
            .any(|m| m.cause == MoveCause::Ims && m.to == "a" && m.from == "b"),
        "{moves:?}"
    );
    assert!(manager.move_counts().ims >= 1);
    let sig = seen_a.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert!(
        sig.iter()
            .any(|s| matches!(s, MachineSignal::Messages { ims } if *ims >= 1)),
        "{sig:?}"
    );
    assert!(
        sig.iter().any(|s| matches!(s, MachineSignal::CoreGranted { .. })),
        "{sig:?}"
    );
    // The grant is in both machines' timelines.
    a.stop();
    b.stop();
    let gained = a
        .trace_events()
        .into_iter()
        .flat_map(|(_, e)| e)
        .any(|e| e.name == "core gained");
    let lost = b
        .trace_events()
        .into_iter()
        .flat_map(|(_, e)| e)
        .any(|e| e.name == "core lost");
    assert!(gained && lost);
}

/// Every CPU is held by a busy machine: the machine without a core waits (the manager queues
/// it) until a holder's worker runs out of work and hands its CPU over instead of sleeping.
#[test]
fn issue_11_an_idle_holder_hands_its_core_to_a_waiting_machine() {
    let (c0, c1) = two();
    let both = CpuSet([c0, c1].into());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let a = machine("a", &both, &[c0], &seen);
    let b = machine("b", &both, &[c1], &seen);
    move_core(c0, &a.handle(), &b.handle()).unwrap_or_else(|e| panic!("{e}"));
    let ha = a.handle();
    until("a's worker leaving", || ha.serving_cpus().is_empty());
    let manager = MachineManager::start(
        vec![a.handle(), b.handle()],
        Policy::Utilization,
        Duration::from_secs(3600),
    );
    let released = Arc::new(AtomicBool::new(false));
    let busy: Vec<_> = (0..8u64)
        .map(|i| {
            let r = released.clone();
            b.spawn("busy", async move {
                while !r.load(Ordering::SeqCst) {
                    yield_now().await;
                }
                i
            })
        })
        .collect();
    until("b busy on both CPUs", || b.serving_cpus().len() == 2);
    let job = a.spawn("needs-a-core", async { 7 });
    until("a waiting for a core", || ha.waits_for_core());
    assert!(a.active_cpus().is_empty());
    released.store(true, Ordering::SeqCst);
    assert_eq!(within_a_minute("a's task", move || block_on(job)), Ok(7));
    let sum: u64 = busy.into_iter().map(|j| block_on(j).unwrap_or(0)).sum();
    assert_eq!(sum, (0..8).sum::<u64>());
    let moves = manager.moves();
    assert!(
        moves
            .iter()
            .any(|m| m.cause == MoveCause::Idle && m.to == "a" && m.from == "b"),
        "{moves:?}"
    );
    assert!(!ha.waits_for_core());
}

/// A static manager never grants: the request waits until a core is moved back explicitly.
#[test]
fn issue_11_a_static_manager_does_not_grant_on_ims() {
    let (c0, c1) = two();
    let both = CpuSet([c0, c1].into());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let a = machine("a", &both, &[c0], &seen);
    let b = machine("b", &both, &[c1], &seen);
    move_core(c0, &a.handle(), &b.handle()).unwrap_or_else(|e| panic!("{e}"));
    let ha = a.handle();
    until("a's worker leaving", || ha.serving_cpus().is_empty());
    let manager = MachineManager::start(
        vec![a.handle(), b.handle()],
        Policy::Static,
        Duration::from_millis(1),
    );
    let job = a.spawn("waits", async { 3 });
    until("the IMS reaching the manager", || a.stats().ims_without_core >= 1);
    std::thread::sleep(Duration::from_millis(50));
    assert!(a.active_cpus().is_empty() && !ha.waits_for_core());
    move_core(c0, &b.handle(), &a.handle()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(within_a_minute("a's task", move || block_on(job)), Ok(3));
    assert!(manager.moves().iter().all(|m| m.cause == MoveCause::Explicit));
}

multios_aam::interface! {
    pub trait Count as CountClient {
        fn next(&self, n: u64) -> u64;
    }
}

struct Plus(u64);

impl Count for Plus {
    async fn next(&self, n: u64) -> u64 {
        n + self.0
    }
}

/// Two server machines share one CPU (one holds it, the other none) and a client on the other
/// CPU calls them in turn from several tasks: nearly every call must activate a machine that
/// holds no core (a grant in the sender's IMS, a hand-over by the idle holder, or the policy).
/// Every call returns its value; a lost activation would stop the round trips (the watchdog
/// fails the test instead of hanging).
#[test]
fn issue_11_no_lost_activation_between_machines_sharing_a_cpu() {
    let (c0, c1) = two();
    let server = |name: &str, active: bool| {
        MachineBuilder::new(name)
            .cpus(CpuSet([c1].into()))
            .active_cpus(if active {
                CpuSet([c1].into())
            } else {
                CpuSet::default()
            })
            .idle_spin(Duration::from_micros(5))
            .build()
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let (even, odd) = (server("even", true), server("odd", false));
    let manager = MachineManager::start(
        vec![even.handle(), odd.handle()],
        Policy::Utilization,
        Duration::from_millis(1),
    );
    let client = MachineBuilder::new("caller")
        .cpus(CpuSet([c0].into()))
        .idle_spin(Duration::from_micros(5))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let (se, so) = (
        even.serve(Plus(0), ServeOptions::default()),
        odd.serve(Plus(1), ServeOptions::default()),
    );
    let progress = Arc::new(AtomicU64::new(0));
    let (tasks, per) = (4u64, 2_500u64);
    let jobs: Vec<_> = (0..tasks)
        .map(|t| {
            let (e, o) = (
                CountClient::new(se.connect(ConnectOptions::default())),
                CountClient::new(so.connect(ConnectOptions::default())),
            );
            let p = progress.clone();
            client.spawn("alternate", async move {
                let mut wrong = 0u64;
                for i in 0..per {
                    let n = t * per + i;
                    let (want, got) = if i % 2 == 0 {
                        (n, e.next(n).await)
                    } else {
                        (n + 1, o.next(n).await)
                    };
                    wrong += u64::from(got != Ok(want));
                    p.fetch_add(1, Ordering::Relaxed);
                }
                wrong
            })
        })
        .collect();
    // Watchdog: progress every 20 s at least.
    let mut last = 0;
    let mut since = Instant::now();
    while progress.load(Ordering::Relaxed) < tasks * per {
        let now = progress.load(Ordering::Relaxed);
        if now != last {
            (last, since) = (now, Instant::now());
        }
        assert!(
            since.elapsed() < Duration::from_secs(20),
            "no progress for 20 s at {now} of {} calls: a lost activation (even holds {:?}, odd {:?}, waiting {} / {})",
            tasks * per,
            even.active_cpus(),
            odd.active_cpus(),
            even.waits_for_core(),
            odd.waits_for_core()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let wrong: u64 = jobs.into_iter().map(|j| block_on(j).unwrap_or(u64::MAX)).sum();
    assert_eq!(wrong, 0);
    let c = manager.move_counts();
    assert!(c.total() > 0, "{c:?}");
    // One holder at a time on the shared CPU.
    assert!(even.active_cpus().len() + odd.active_cpus().len() <= 1);
}
