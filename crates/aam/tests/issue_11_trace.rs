//! Issue #11: the per-worker event rings and their Chrome trace JSON export.

use multios_aam::manager::move_core;
use multios_aam::trace::{chrome_trace, EventKind};
use multios_aam::{block_on, ConnectOptions, MachineBuilder, ServeOptions};
use multios_host::CpuSet;
use std::time::Duration;

#[test]
fn issue_11_task_runs_and_sleeps_are_exported_as_chrome_trace_json() {
    let server = MachineBuilder::new("traced-server")
        .idle_spin(Duration::ZERO)
        .trace(16)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let client = MachineBuilder::new("traced-client")
        .trace(1000)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    struct Unit;
    let ep = server
        .serve(Unit, ServeOptions::default())
        .connect(ConnectOptions::default());
    let r = block_on(client.spawn("driver", async move {
        let mut n = 0;
        for _ in 0..40 {
            std::thread::sleep(Duration::from_micros(100));
            n += ep.call("Unit::one", |_u| async { 1 }).await.unwrap_or(0);
        }
        n
    }));
    assert_eq!(r, Ok(40));
    // The ring keeps only the newest 16 events of the server's worker.
    let server_events = server.trace_events();
    assert_eq!(server_events.len(), 1);
    let (cpu, events) = &server_events[0];
    assert_eq!(*cpu, server.cpus()[0]);
    assert_eq!(events.len(), 16);
    assert!(events.iter().any(|e| e.kind == EventKind::Sleep));
    assert!(events
        .iter()
        .any(|e| e.kind == EventKind::Task && e.name == "Unit::one"));
    assert!(events.iter().all(|e| e.end_tsc >= e.start_tsc));

    let json = chrome_trace(&[&client.handle(), &server.handle()]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}"));
    let evs = v["traceEvents"].as_array().cloned().unwrap_or_default();
    let names: Vec<String> = evs
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
        .map(|e| e["args"]["name"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(names, ["machine traced-client", "machine traced-server"]);
    let driver = evs
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"] == "driver" && e["pid"] == 1)
        .count();
    // At least its first poll; more when a result arrived after the driver suspended.
    assert!(driver >= 1, "{driver}");
    assert!(evs
        .iter()
        .any(|e| e["ph"] == "X" && e["name"] == "Unit::one" && e["pid"] == 2));
}

/// An IMS wake-up lands in the ring of the worker it woke, as an instant, once per wake-up the
/// machine counted (the ring is large enough to keep them all), and in the Chrome trace as an
/// instant event ("ph": "i").
#[test]
fn issue_11_ims_wakeups_are_in_the_trace() {
    let server = MachineBuilder::new("ims-server")
        .idle_spin(Duration::ZERO)
        .trace(100_000)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let client = MachineBuilder::new("ims-client")
        .trace(100_000)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    struct Unit;
    let ep = server
        .serve(Unit, ServeOptions::default())
        .connect(ConnectOptions::default());
    let r = block_on(client.spawn("driver", async move {
        let mut n = 0;
        for _ in 0..20 {
            std::thread::sleep(Duration::from_micros(200));
            n += ep.call("Unit::one", |_u| async { 1 }).await.unwrap_or(0);
        }
        n
    }));
    assert_eq!(r, Ok(20));
    client.stop();
    server.stop();
    let wakeups = server.stats().ims_wakeups;
    assert!(wakeups > 0, "the server never slept between calls 200 µs apart");
    let ims: Vec<_> = server
        .trace_events()
        .into_iter()
        .flat_map(|(_, ev)| ev)
        .filter(|e| e.kind == EventKind::Ims)
        .collect();
    assert_eq!(ims.len() as u64, wakeups);
    assert!(ims
        .iter()
        .all(|e| e.start_tsc == e.end_tsc && e.name == "ims wake-up"));

    let json = chrome_trace(&[&client.handle(), &server.handle()]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}"));
    let evs = v["traceEvents"].as_array().cloned().unwrap_or_default();
    let instants = evs
        .iter()
        .filter(|e| e["ph"] == "i" && e["cat"] == "ims" && e["pid"] == 2 && e["s"] == "t")
        .count();
    assert_eq!(instants as u64, wakeups);
}

/// A core move is recorded in both workers' rings (the one that lost the CPU and the one that
/// gained it), and the spell without a core in the ring of the worker that lost it once the core
/// comes back; nothing of the kind is recorded when no core moves.
#[test]
fn issue_11_core_moves_are_in_the_trace() {
    let c = CpuSet::allowed().to_vec();
    let [c0, c1, ..] = c[..] else { return };
    let both = CpuSet([c0, c1].into());
    let build = |name: &str, active: usize| {
        MachineBuilder::new(name)
            .cpus(both.clone())
            .active_cpus(CpuSet([active].into()))
            .trace(1000)
            .build()
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let (a, b) = (build("a", c0), build("b", c1));
    let kinds = |m: &multios_aam::Machine| -> Vec<(usize, EventKind, &'static str)> {
        m.trace_events()
            .into_iter()
            .flat_map(|(cpu, ev)| ev.into_iter().map(move |e| (cpu, e.kind, e.name)))
            .filter(|(_, k, _)| matches!(k, EventKind::CoreMove | EventKind::Dormant))
            .collect()
    };
    // b's worker on c0 has been dormant from the start but has not come back yet: nothing.
    assert!(kinds(&a).is_empty() && kinds(&b).is_empty());
    move_core(c0, &a.handle(), &b.handle()).unwrap_or_else(|e| panic!("{e}"));
    let ha = a.handle();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !ha.serving_cpus().is_empty() {
        assert!(std::time::Instant::now() < deadline, "a's worker never left c0");
        std::thread::sleep(Duration::from_millis(1));
    }
    move_core(c0, &b.handle(), &a.handle()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(block_on(a.spawn("after", async { 1 })), Ok(1));
    a.stop();
    b.stop();
    let ka = kinds(&a);
    let kb = kinds(&b);
    assert!(ka.contains(&(c0, EventKind::CoreMove, "core lost")), "{ka:?}");
    assert!(ka.contains(&(c0, EventKind::CoreMove, "core gained")), "{ka:?}");
    assert!(ka.contains(&(c0, EventKind::Dormant, "no core")), "{ka:?}");
    assert!(kb.contains(&(c0, EventKind::CoreMove, "core gained")), "{kb:?}");
    assert!(kb.contains(&(c0, EventKind::CoreMove, "core lost")), "{kb:?}");
    // Nothing moved on c1.
    assert!(
        ka.iter()
            .chain(&kb)
            .all(|(cpu, k, _)| *cpu == c0 || *k == EventKind::Dormant),
        "{ka:?} {kb:?}"
    );
    let rows = multios_aam::trace::rows(&[&a.handle(), &b.handle()]);
    assert_eq!(rows.len(), 4);
    assert!(rows
        .iter()
        .flat_map(|r| &r.events)
        .all(|e| e.end_ns >= e.start_ns && e.start_ns >= 0.0));
}
