//! Issue #11: the per-worker event rings and their Chrome trace JSON export.

use multios_aam::trace::{chrome_trace, EventKind};
use multios_aam::{block_on, ConnectOptions, MachineBuilder, ServeOptions};
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
