//! Issue #11: clear errors — over-asked cores, CPUs the process may not use, calls to a stopped
//! machine (an error value, never a hang), panicking tasks (reported, the machine keeps serving).

use multios_aam::{
    block_on, CallError, ConnectOptions, MachineBuilder, MachineError, ServeOptions, TaskError,
};
use multios_host::CpuSet;

#[test]
fn issue_11_more_cores_than_usable_is_an_error_naming_the_cpus() {
    let usable = CpuSet::allowed();
    let e = MachineBuilder::new("greedy")
        .cores(usable.len() + 1)
        .build()
        .err();
    let Some(MachineError::TooManyCores { asked, cpus, .. }) = &e else {
        panic!("expected TooManyCores, got {:?}", e.map(|e| e.to_string()));
    };
    assert_eq!(*asked, usable.len() + 1);
    let msg = e.as_ref().map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.contains(&cpus.to_string()) && msg.contains("greedy"), "{msg}");
}

#[test]
fn issue_11_a_cpu_that_does_not_exist_or_is_not_allowed_is_named() {
    let e = MachineBuilder::new("far")
        .cpus(CpuSet([4000].into()))
        .build()
        .err();
    let msg = e.map(|e| e.to_string()).unwrap_or_default();
    assert!(msg.contains("CPU 4000") && msg.contains("far"), "{msg}");

    // A CPU that is online but outside this thread's affinity mask.
    let online = CpuSet::online().unwrap_or_else(|e| panic!("{e}"));
    if online.len() < 2 {
        return;
    }
    let keep = CpuSet([online.to_vec()[0]].into());
    let other = online.to_vec()[1];
    let t = std::thread::spawn(move || {
        let _ = multios_host::cpus::pin_current_thread(&keep);
        MachineBuilder::new("masked")
            .cpus(CpuSet([other].into()))
            .build()
            .err()
            .map(|e| e.to_string())
    });
    let msg = t.join().ok().flatten().unwrap_or_default();
    assert!(msg.contains(&format!("may not run on CPU {other}")), "{msg}");
}

struct Echo;

impl Echo {
    async fn echo(&self, v: u64) -> u64 {
        v
    }
    async fn block(&self, started: std::sync::mpsc::Sender<()>, gate: std::sync::mpsc::Receiver<()>) -> u64 {
        let _ = started.send(());
        let _ = gate.recv();
        0
    }
}

#[test]
fn issue_11_a_call_to_a_stopped_machine_returns_an_error() {
    let server = MachineBuilder::new("server")
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let service = server.serve(Echo, ServeOptions::default());
    let ep = service.connect(ConnectOptions::default());
    assert_eq!(
        ep.call("Echo::echo", |s| async move { s.echo(7).await }).wait(),
        Ok(7)
    );

    // Queued behind a call that holds the only worker, then the machine stops.
    let (gate_tx, gate_rx) = std::sync::mpsc::channel();
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let blocker = ep.call(
        "Echo::block",
        |s| async move { s.block(started_tx, gate_rx).await },
    );
    let queued = ep.call("Echo::echo", |s| async move { s.echo(8).await });
    let _ = started_rx.recv();
    let handle = server.handle();
    let stopper = std::thread::spawn(move || server.stop());
    while !handle.is_stopped() {
        std::thread::yield_now();
    }
    let _ = gate_tx.send(());
    let _ = stopper.join();
    assert_eq!(blocker.wait(), Ok(0));
    assert!(matches!(queued.wait(), Err(CallError::Stopped { ref machine, .. }) if machine == "server"));
    let after = ep.call("Echo::echo", |s| async move { s.echo(9).await }).wait();
    let Err(e) = after else {
        panic!("a call to a stopped machine succeeded")
    };
    assert!(e.to_string().contains("'server' has stopped"), "{e}");
}

#[test]
fn issue_11_a_panicking_task_is_reported_and_the_machine_keeps_serving() {
    let m = MachineBuilder::new("fragile")
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let bad = m.spawn("boom", async {
        if std::hint::black_box(true) {
            panic!("task exploded");
        }
        1u32
    });
    assert!(matches!(
        block_on(bad),
        Err(TaskError::Panicked { ref machine, ref task }) if machine == "fragile" && task == "boom"
    ));
    assert_eq!(block_on(m.spawn("fine", async { 2u32 })), Ok(2));
    let reports = m.panics();
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].machine, "fragile");
    assert_eq!(reports[0].task, "boom");
    assert!(reports[0].message.contains("task exploded"));

    // The same through a machine call: the caller gets Panicked, the server keeps serving.
    let service = m.serve(Echo, ServeOptions::default());
    let ep = service.connect(ConnectOptions::default());
    let r = ep
        .call("Echo::panic", |_s| async move {
            if std::hint::black_box(true) {
                panic!("server task exploded");
            }
            0u64
        })
        .wait();
    assert!(matches!(r, Err(CallError::Panicked { .. })), "{r:?}");
    assert_eq!(
        ep.call("Echo::echo", |s| async move { s.echo(3).await }).wait(),
        Ok(3)
    );
    assert_eq!(m.panics().len(), 2);
}
