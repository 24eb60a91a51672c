//! Issue #11: a machine with several workers does not leave queued work waiting for its busy
//! worker while another sleeps; the queue of a dropped endpoint leaves the server machine (once
//! every request it queued was taken), also while calls are in flight and with many clients
//! connecting and dropping at once.

use multios_aam::{block_on, ConnectOptions, MachineBuilder, MachineSignal, ServeOptions};
use multios_host::CpuSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn within_a_minute<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{what}: no result after 60 s"))
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

fn one_cpu() -> CpuSet {
    CpuSet([CpuSet::allowed().to_vec()[0]].into())
}

struct Gate(AtomicBool);

/// Two workers on one CPU, the second asleep. A request blocks its worker until a second
/// request (from another client) has run: only the sleeping worker can run it, so without the
/// sender's IMS to a machine whose awake worker is busy, the first never returns.
#[test]
fn issue_11_a_sleeping_worker_takes_work_the_busy_one_would_delay() {
    let server = MachineBuilder::new("pool")
        .cpus(one_cpu())
        .workers_per_cpu(2)
        .idle_spin(Duration::ZERO)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let svc = server.serve(Gate(AtomicBool::new(false)), ServeOptions::default());
    let (first, second) = (
        svc.connect(ConnectOptions::default()),
        svc.connect(ConnectOptions::default()),
    );
    // Both workers asleep before the first request.
    until("both workers asleep", || server.sleeping_workers() == 2);
    let blocked = first.call("Gate::wait", |g| async move {
        // Blocks this worker (no await): the machine's other worker must run the opener.
        while !g.0.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_micros(200));
        }
        1
    });
    // Give the first request time to be taken by a worker, which then blocks.
    std::thread::sleep(Duration::from_millis(20));
    let opener = second.call("Gate::open", |g| async move {
        g.0.store(true, Ordering::SeqCst);
        2
    });
    let r = within_a_minute("the request behind the busy worker", move || {
        (block_on(opener), block_on(blocked))
    });
    assert_eq!(r, (Ok(2), Ok(1)));
    assert!(server.stats().sibling_ims >= 1, "{:?}", server.stats());
}

/// The same for a task spawned onto a machine whose awake worker is blocked.
#[test]
fn issue_11_a_sleeping_worker_takes_a_task_the_busy_one_would_delay() {
    let m = MachineBuilder::new("pool2")
        .cpus(one_cpu())
        .workers_per_cpu(2)
        .idle_spin(Duration::ZERO)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    until("both workers asleep", || m.sleeping_workers() == 2);
    let open = Arc::new(AtomicBool::new(false));
    let o = open.clone();
    let blocked = m.spawn("blocks", async move {
        while !o.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_micros(200));
        }
        1
    });
    std::thread::sleep(Duration::from_millis(20));
    let o = open.clone();
    let opener = m.spawn("opens", async move {
        o.store(true, Ordering::SeqCst);
        2
    });
    let r = within_a_minute("the task behind the busy worker", move || {
        (block_on(opener), block_on(blocked))
    });
    assert_eq!(r, (Ok(2), Ok(1)));
}

struct Echo;

/// Dropped endpoints leave the server: one call each, then dropped; a call still in flight when
/// its endpoint is dropped completes, and its queue leaves afterwards; the server is told by a
/// machine signal.
#[test]
fn issue_11_dropped_endpoints_are_unregistered() {
    let closed = Arc::new(AtomicUsize::new(0));
    let c = closed.clone();
    let server = MachineBuilder::new("srv")
        .idle_spin(Duration::from_micros(10))
        .on_signal(move |s| {
            if *s == MachineSignal::InterfaceClosed {
                c.fetch_add(1, Ordering::SeqCst);
            }
        })
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let svc = server.serve(Echo, ServeOptions::default());
    let keep = svc.connect(ConnectOptions::default());
    for i in 0..100u64 {
        let ep = svc.connect(ConnectOptions::default());
        assert_eq!(ep.call("Echo::id", move |_e| async move { i }).wait(), Ok(i));
    }
    until("99 + 1 queues gone", || server.client_queues() == 1);
    // The signal runs on the server machine after the queue has left it, so it can come a little
    // later than the count (CI, 2026-11-26: 99 of 100 when the queues were counted).
    until("100 InterfaceClosed signals", || {
        closed.load(Ordering::SeqCst) >= 100
    });
    assert_eq!(closed.load(Ordering::SeqCst), 100);

    // A call in flight (its future waits for a gate) outlives its endpoint.
    let gate = Arc::new(AtomicBool::new(false));
    let g = gate.clone();
    let ep = svc.connect(ConnectOptions::default());
    let call = ep.call("Echo::later", move |_e| async move {
        std::future::poll_fn(|cx| {
            if g.load(Ordering::SeqCst) {
                std::task::Poll::Ready(5u64)
            } else {
                cx.waker().wake_by_ref();
                std::task::Poll::Pending
            }
        })
        .await
    });
    assert_eq!(server.client_queues(), 2);
    drop(ep);
    until("the in-flight call's queue gone", || server.client_queues() == 1);
    gate.store(true, Ordering::SeqCst);
    assert_eq!(within_a_minute("the in-flight call", move || call.wait()), Ok(5));
    assert_eq!(keep.call("Echo::id", |_e| async { 9u64 }).wait(), Ok(9));
}

/// A request queued before its endpoint is dropped is still served (the queue leaves only once
/// it was taken); the server machine is asleep when the drop happens.
#[test]
fn issue_11_a_dropped_endpoints_queued_requests_are_still_served() {
    let server = MachineBuilder::new("sleepy")
        .idle_spin(Duration::ZERO)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let svc = server.serve(Echo, ServeOptions::default());
    until("the server asleep", || server.sleeping_workers() == 1);
    let calls: Vec<_> = {
        let ep = svc.connect(ConnectOptions::default());
        (0..200u64)
            .map(|i| ep.call("Echo::id", move |_e| async move { i }))
            .collect()
    };
    let got: Vec<u64> = within_a_minute("200 calls of a dropped endpoint", move || {
        calls.into_iter().map(|c| c.wait().unwrap_or(u64::MAX)).collect()
    });
    assert_eq!(got, (0..200).collect::<Vec<_>>());
    until("the queue gone", || server.client_queues() == 0);
}

/// Clients on four threads connect, call and drop 250 times each while the server polls and
/// sleeps: every call returns its value and no queue is left registered.
#[test]
fn issue_11_endpoints_dropped_concurrently_leave_no_queue() {
    let server = MachineBuilder::new("busy-srv")
        .idle_spin(Duration::from_micros(2))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let svc = server.serve(Echo, ServeOptions::default());
    let wrong = Arc::new(Mutex::new(Vec::new()));
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let svc = svc.clone();
            let wrong = wrong.clone();
            std::thread::spawn(move || {
                for i in 0..250u64 {
                    let ep = svc.connect(ConnectOptions::default());
                    let v = t * 1000 + i;
                    let a = ep.call("Echo::id", move |_e| async move { v });
                    let b = ep.call("Echo::id", move |_e| async move { v + 1 });
                    drop(ep);
                    let got = (a.wait(), b.wait());
                    if got != (Ok(v), Ok(v + 1)) {
                        wrong.lock().unwrap_or_else(|e| e.into_inner()).push((v, got));
                    }
                }
            })
        })
        .collect();
    within_a_minute("1000 connect/call/drop rounds", move || {
        for t in threads {
            t.join().unwrap_or_else(|_| panic!("a client thread panicked"));
        }
    });
    assert!(wrong.lock().unwrap_or_else(|e| e.into_inner()).is_empty());
    until("every queue gone", || server.client_queues() == 0);
}
