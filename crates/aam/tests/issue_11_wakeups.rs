//! Issue #11: futures and counting signals under contention (a stress test with a fixed seed),
//! no lost wake-up in 10^6 IMS round trips, the call variants, per-client order and the
//! server's in-flight limit.

use multios_aam::{
    block_on, oneshot, yield_now, CallError, ConnectOptions, CountingSignal, MachineBuilder, MachineHandle,
    ServeOptions,
};
use multios_host::CpuSet;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn two_cpus() -> (usize, usize) {
    let c = CpuSet::allowed().to_vec();
    (c[0], *c.last().unwrap_or(&c[0]))
}

/// Fails (instead of hanging) if `progress` stops moving for a long time while `done` is false.
fn watchdog(progress: &AtomicU64, done: impl Fn() -> bool, what: &str) {
    let mut last = u64::MAX;
    let mut still = 0;
    while !done() {
        std::thread::sleep(Duration::from_millis(200));
        let now = progress.load(Ordering::SeqCst);
        still = if now == last { still + 1 } else { 0 };
        last = now;
        assert!(
            still < 300,
            "{what}: no progress for 60 s at {now}: a lost wake-up"
        );
    }
}

#[test]
fn issue_11_futures_and_signals_under_contention() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x11_0aa3);
    let m = MachineBuilder::new("stress")
        .cores(CpuSet::allowed().len().min(2))
        .work_stealing(true)
        .idle_spin(Duration::from_micros(3))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let h = m.handle();
    let rounds = 300;
    let total = Arc::new(AtomicU64::new(0));
    let mut expect = 0u64;
    for _ in 0..rounds {
        let n: usize = rng.gen_range(1..40);
        let signal = CountingSignal::new(n);
        let mut senders = Vec::new();
        let mut waits = Vec::new();
        for i in 0..n {
            let (tx, rx) = oneshot::channel::<u64>();
            let v = rng.gen_range(0..1000u64);
            expect += v;
            let yields: u32 = rng.gen_range(0..3);
            let s = signal.clone();
            let t = total.clone();
            // Half of the values come from tasks, half from outside threads.
            if i % 2 == 0 {
                let hh = h.clone();
                waits.push(h.spawn("waiter", async move {
                    for _ in 0..yields {
                        yield_now().await;
                    }
                    let got = rx.await.unwrap_or(0);
                    t.fetch_add(got, Ordering::SeqCst);
                    drop(hh.spawn("signal", async move { s.signal() }));
                }));
                senders.push((tx, v, true));
            } else {
                waits.push(h.spawn("waiter", async move {
                    let got = rx.await.unwrap_or(0);
                    t.fetch_add(got, Ordering::SeqCst);
                    s.signal();
                }));
                senders.push((tx, v, false));
            }
        }
        let hh = h.clone();
        let from_tasks: Vec<_> = senders.iter().map(|s| s.2).collect();
        let mut task_side = Vec::new();
        let mut thread_side = Vec::new();
        for ((tx, v, _), in_task) in senders.into_iter().zip(from_tasks) {
            if in_task {
                task_side.push((tx, v));
            } else {
                thread_side.push((tx, v));
            }
        }
        drop(hh.spawn("senders", async move {
            for (tx, v) in task_side {
                yield_now().await;
                tx.send(v);
            }
        }));
        let th = std::thread::spawn(move || {
            for (tx, v) in thread_side {
                std::thread::yield_now();
                tx.send(v);
            }
        });
        let waiter = h.spawn("join", {
            let s = signal.clone();
            async move { s.wait().await }
        });
        assert_eq!(block_on(waiter), Ok(()));
        for w in waits {
            assert_eq!(block_on(w), Ok(()));
        }
        let _ = th.join();
    }
    assert_eq!(total.load(Ordering::SeqCst), expect);
    assert!(m.panics().is_empty());
}

struct Ping;

#[test]
fn issue_11_no_lost_wakeup_in_a_million_ims_round_trips() {
    let (a, b) = two_cpus();
    let server = MachineBuilder::new("ims-server")
        .cpus(CpuSet([b].into()))
        .idle_spin(Duration::ZERO)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let client = MachineBuilder::new("ims-client")
        .cpus(CpuSet([a].into()))
        .idle_spin(Duration::from_micros(1))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let service = server.serve(Ping, ServeOptions::default());
    let clients = 8u64;
    let per = 1_000_000 / clients;
    let progress = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let mut joins = Vec::new();
    for c in 0..clients {
        let ep = service.connect(ConnectOptions::default());
        let p = progress.clone();
        let d = done.clone();
        joins.push(client.spawn("pinger", async move {
            let mut sum = 0u64;
            for i in 0..per {
                sum += ep.call("Ping::ping", move |_s| async move { i ^ c }).await?;
                p.fetch_add(1, Ordering::Relaxed);
            }
            d.fetch_add(1, Ordering::SeqCst);
            Ok::<u64, CallError>(sum)
        }));
    }
    watchdog(
        &progress,
        || done.load(Ordering::SeqCst) == clients as usize,
        "IMS round trips",
    );
    for (c, j) in joins.into_iter().enumerate() {
        let want: u64 = (0..per).map(|i| i ^ c as u64).sum();
        assert_eq!(block_on(j).ok().and_then(|r| r.ok()), Some(want));
    }
    assert_eq!(progress.load(Ordering::SeqCst), clients * per);
    // The server slept and was woken by IMS (it never spins).
    assert!(server.stats().ims_wakeups > 0, "{:?}", server.stats());

    // Then one client at a time with neither machine spinning: nearly every call needs an IMS
    // each way, and each lands on the sleep/wake boundary of the other side.
    drop(client);
    let lone = MachineBuilder::new("ims-client-idle")
        .cpus(CpuSet([a].into()))
        .idle_spin(Duration::ZERO)
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let ep = service.connect(ConnectOptions::default());
    let calls = 50_000u64;
    let p = progress.clone();
    let d = done.clone();
    let j = lone.spawn("lone-pinger", async move {
        let mut sum = 0u64;
        for i in 0..calls {
            sum += ep.call("Ping::ping", move |_s| async move { i }).await?;
            p.fetch_add(1, Ordering::Relaxed);
        }
        d.fetch_add(1, Ordering::SeqCst);
        Ok::<u64, CallError>(sum)
    });
    watchdog(
        &progress,
        || done.load(Ordering::SeqCst) == clients as usize + 1,
        "single-client IMS round trips",
    );
    assert_eq!(
        block_on(j).ok().and_then(|r| r.ok()),
        Some((0..calls).sum::<u64>())
    );
    assert!(lone.stats().ims_wakeups > 0, "{:?}", lone.stats());
}

#[test]
fn issue_11_call_variants_order_and_in_flight_limit() {
    let (a, b) = two_cpus();
    let server = MachineBuilder::new("srv")
        .cpus(CpuSet([b].into()))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let client = MachineBuilder::new("cli")
        .cpus(CpuSet([a].into()))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    struct Log {
        seen: Mutex<Vec<u32>>,
        running: AtomicUsize,
        max_running: AtomicUsize,
    }
    let service = server.serve(
        Log {
            seen: Mutex::new(Vec::new()),
            running: AtomicUsize::new(0),
            max_running: AtomicUsize::new(0),
        },
        ServeOptions {
            max_in_flight_per_client: 2,
        },
    );
    // Ordered: issued asynchronously all at once, executed one at a time in order.
    let ordered = service.connect(ConnectOptions { ordered: true });
    let calls: Vec<_> = (0..200u32)
        .map(|i| {
            ordered.call("Log::push", move |s| async move {
                let now = s.running.fetch_add(1, Ordering::SeqCst) + 1;
                s.max_running.fetch_max(now, Ordering::SeqCst);
                yield_now().await;
                if let Ok(mut v) = s.seen.lock() {
                    v.push(i);
                }
                s.running.fetch_sub(1, Ordering::SeqCst);
                i
            })
        })
        .collect();
    for (i, c) in calls.into_iter().enumerate() {
        assert_eq!(c.wait(), Ok(i as u32));
    }
    let seen = ordered
        .call("Log::get", |s| async move {
            s.seen.lock().map(|v| v.clone()).unwrap_or_default()
        })
        .wait()
        .unwrap_or_default();
    assert_eq!(seen, (0..200).collect::<Vec<_>>());
    // Unordered client: the server's limit of 2 in flight holds even with yields in between.
    let unordered = service.connect(ConnectOptions::default());
    let _ = unordered
        .call("Log::reset", |s| async move {
            s.max_running.store(0, Ordering::SeqCst)
        })
        .wait();
    let calls: Vec<_> = (0..100u32)
        .map(|_| {
            unordered.call("Log::work", |s| async move {
                let now = s.running.fetch_add(1, Ordering::SeqCst) + 1;
                s.max_running.fetch_max(now, Ordering::SeqCst);
                for _ in 0..3 {
                    yield_now().await;
                }
                s.running.fetch_sub(1, Ordering::SeqCst);
            })
        })
        .collect();
    for c in calls {
        assert_eq!(c.wait(), Ok(()));
    }
    let max = unordered
        .call(
            "Log::max",
            |s| async move { s.max_running.load(Ordering::SeqCst) },
        )
        .wait()
        .unwrap_or(0);
    assert_eq!(max, 2, "the in-flight limit is 2 per client");

    // Synchronous variant from a client task, and the event-based variant.
    let ep = service.connect(ConnectOptions::default());
    let ch: MachineHandle = client.handle();
    let sync = block_on(client.spawn("sync", async move {
        let a = ep
            .call("Log::len", |s| async move {
                s.seen.lock().map(|v| v.len()).unwrap_or(0)
            })
            .await;
        let then = ep
            .call("Log::first", |s| async move {
                s.seen.lock().map(|v| v[0]).unwrap_or(9)
            })
            .then(&ch, "on-result", |r| async move { r.map(|v| v + 1000) });
        (a, then.await)
    }));
    let (len, then) = sync.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(len, Ok(200));
    assert_eq!(then, Ok(Ok(1000)));
}
