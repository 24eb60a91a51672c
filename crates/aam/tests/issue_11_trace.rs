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

/// A call's name travels beside its slot and the server reads it only where it is used (it is no
/// longer read per call: that moved a cache line per call). Each place still gets the right name:
/// the trace of a call run inline, the task of a call that waits, and the panic report of a call
/// that panics, untraced and traced; and the names of consecutive calls through the same slots
/// do not mix.
#[test]
fn issue_11_call_names_are_read_where_they_are_used() {
    for traced in [false, true] {
        let mut b = MachineBuilder::new("named-server");
        if traced {
            b = b.trace(10_000);
        }
        let server = b.build().unwrap_or_else(|e| panic!("{e}"));
        let client = MachineBuilder::new("named-client")
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        struct Unit;
        let ep = server
            .serve(Unit, ServeOptions::default())
            .connect(ConnectOptions::default());
        let r = block_on(client.spawn("driver", async move {
            let mut sum = 0u64;
            // More calls than the ring has slots, so every slot is reused with other names.
            for i in 0..200u64 {
                sum += match i % 3 {
                    0 => ep.call("Named::inline", |_u| async { 1u64 }).await,
                    1 => {
                        ep.call("Named::waits", |_u| async {
                            multios_aam::yield_now().await;
                            1u64
                        })
                        .await
                    }
                    _ => {
                        let r = ep
                            .call("Named::panics", |_u| async {
                                if std::hint::black_box(true) {
                                    panic!("named panic");
                                }
                                1u64
                            })
                            .await;
                        assert!(r.is_err(), "a panicking call has no result");
                        Ok(0)
                    }
                }
                .unwrap_or_else(|e| panic!("{e}"));
            }
            sum
        }));
        assert_eq!(r, Ok(134));
        let panics = server.panics();
        assert_eq!(panics.len(), 66, "traced: {traced}");
        assert!(panics.iter().all(|p| p.task == "Named::panics"
            && p.machine == "named-server"
            && p.message.contains("named panic")));
        let events: Vec<_> = server.trace_events().into_iter().flat_map(|(_, e)| e).collect();
        if !traced {
            assert!(events.is_empty());
            continue;
        }
        let count = |n: &str| {
            events
                .iter()
                .filter(|e| e.kind == EventKind::Task && e.name == n)
                .count()
        };
        // Every inline call is one event; a call that waits is its first, inline poll plus at
        // least one run of its task; each panicking call is one event too.
        assert_eq!(count("Named::inline"), 67);
        assert!(count("Named::waits") >= 2 * 67, "{}", count("Named::waits"));
        assert_eq!(count("Named::panics"), 66);
        assert!(events.iter().filter(|e| e.kind == EventKind::Task).all(|e| [
            "Named::inline",
            "Named::waits",
            "Named::panics"
        ]
        .contains(&e.name)));
    }
}
