//! Loom model checks of the runtime's no-lost-wake-up arguments: every interleaving (within
//! loom's bounds) of the real code in `multios-aam-sync`. Built only with
//! `RUSTFLAGS="--cfg multios_loom" cargo test -p multios-aam-sync --release --test loom`
//! (scripts/test.sh does it in its own target directory).
#![cfg(multios_loom)]

use loom::future::block_on;
use loom::sync::atomic::AtomicBool;
use loom::sync::Arc;
use loom::thread;
use multios_aam_sync::parker::{notify_unless_polling, sleep_unless, Parker};
use multios_aam_sync::ring::{self, Completed, Ring, CLOSED};
use multios_aam_sync::task_state::TaskState;
use multios_aam_sync::{oneshot, CountingSignal};
use std::future::poll_fn;
use std::sync::atomic::Ordering::SeqCst;

/// Loom with a preemption bound of 3 for the larger models (loom's documented way to keep a
/// model's exploration finite and short; bugs of this kind need one or two preemptions).
fn bounded(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(f);
}

/// A value sent from another thread reaches a receiver that registers its waker meanwhile.
#[test]
fn issue_11_loom_oneshot_no_lost_wakeup() {
    loom::model(|| {
        let (tx, rx) = oneshot::channel::<u32>();
        let t = thread::spawn(move || tx.send(7));
        assert_eq!(block_on(rx), Ok(7));
        t.join().expect("sender thread");
    });
}

/// A sender dropped on another thread closes the future (no hang).
#[test]
fn issue_11_loom_oneshot_dropped_sender_closes() {
    loom::model(|| {
        let (tx, rx) = oneshot::channel::<u32>();
        let t = thread::spawn(move || drop(tx));
        assert_eq!(block_on(rx), Err(oneshot::Closed::Dropped));
        t.join().expect("sender thread");
    });
}

/// Two signallers on two threads; the waiter completes (the last signal wakes it).
#[test]
fn issue_11_loom_counting_signal_no_lost_wakeup() {
    bounded(|| {
        let s = CountingSignal::new(2);
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                thread::spawn(move || s.signal())
            })
            .collect();
        block_on(s.wait());
        assert_eq!(s.count(), 0);
        for t in ts {
            t.join().expect("signaller");
        }
    });
}

/// A wake-up that arrives while the task runs is recorded and the task enqueued exactly once.
#[test]
fn issue_11_loom_task_state_wake_while_running() {
    loom::model(|| {
        let st = Arc::new(TaskState::new());
        st.begin_run();
        let w = st.clone();
        let waker = thread::spawn(move || w.wake());
        let requeue_by_worker = st.end_run_pending();
        let enqueue_by_waker = waker.join().expect("waker");
        // Exactly one side enqueues the task again.
        assert!(requeue_by_worker ^ enqueue_by_waker);
    });
}

type TestRing = Ring<u8, u8>;

fn put_request(r: &TestRing, t: u64, v: u64) {
    // SAFETY: the ticket was claimed by this thread and is not yet published.
    unsafe { r.write(t, 1, 0, |p| ring::put(p, v)) };
}

/// Serves one request: takes it, answers with the request + 1 (an `Arc` to detect leaks).
fn serve_one(r: &TestRing) -> Option<Completed> {
    let t = r.take()?;
    // SAFETY: taken by this thread until complete.
    let v: u64 = unsafe { r.with_data(t, |d| ring::take::<u64>(&mut d.payload)) };
    // SAFETY: as above.
    unsafe { r.with_data(t, |d| ring::put(&mut d.payload, Arc::new(v + 1))) };
    Some(r.complete(t, 0, |p| {
        // SAFETY: the result put above, abandoned by the client.
        drop(unsafe { ring::take::<Arc<u64>>(p) })
    }))
}

/// The client awaits its result (registering a waker) while the server serves; two calls through
/// a two-slot ring, so the second reuses the slot the first freed.
#[test]
fn issue_11_loom_ring_call_and_result_no_lost_wakeup() {
    bounded(|| {
        let r = Arc::new(TestRing::new(2));
        let srv = r.clone();
        let server = thread::spawn(move || {
            let mut served = 0;
            while served < 2 {
                match serve_one(&srv) {
                    Some(_) => served += 1,
                    None => thread::yield_now(),
                }
            }
        });
        for i in 0..2u64 {
            let t = r.claim().expect("a free slot");
            put_request(&r, t, 10 * i);
            r.publish(t);
            let flags = block_on(poll_fn(|cx| r.poll(t, cx.waker())));
            assert_eq!(flags & CLOSED, 0);
            // SAFETY: DONE observed; the result is the client's.
            let v = unsafe { r.with_data(t, |d| ring::take::<Arc<u64>>(&mut d.payload)) };
            assert_eq!(*v, 10 * i + 1);
            r.release(t);
        }
        server.join().expect("server");
    });
}

/// A client that drops its call races with the server's completion: the result is dropped once
/// (loom reports a leaked or doubly dropped `Arc`) and the slot is free again afterwards.
#[test]
fn issue_11_loom_ring_abandon_races_completion() {
    bounded(|| {
        let r = Arc::new(TestRing::new(2));
        let t = r.claim().expect("a free slot");
        put_request(&r, t, 1);
        r.publish(t);
        let srv = r.clone();
        let server = thread::spawn(move || loop {
            if serve_one(&srv).is_some() {
                break;
            }
            thread::yield_now();
        });
        if let Some(flags) = r.abandon(t) {
            assert_eq!(flags & CLOSED, 0);
            // SAFETY: DONE observed before abandoning: the result is the client's to drop.
            drop(unsafe { r.with_data(t, |d| ring::take::<Arc<u64>>(&mut d.payload)) });
            r.release(t);
        }
        server.join().expect("server");
        // Both tickets of the next lap can be claimed: the slot was freed by one side.
        assert!(r.claim().is_some() && r.claim().is_some());
    });
}

/// IMS: the server sleeps when idle (clearing the polling flag, re-checking the ring); the client
/// publishes and wakes it only if the flag is clear. The request is always served: a lost
/// wake-up would leave the server asleep, which loom reports as a deadlock.
#[test]
fn issue_11_loom_ims_no_lost_wakeup() {
    bounded(|| {
        let r = Arc::new(TestRing::new(2));
        let polling = Arc::new(AtomicBool::new(true));
        let parker = Arc::new(Parker::default());
        let (srv, flag, pk) = (r.clone(), polling.clone(), parker.clone());
        let server = thread::spawn(move || loop {
            if serve_one(&srv).is_some() {
                return;
            }
            sleep_unless(
                &pk,
                || flag.store(false, SeqCst),
                || srv.ready(),
                || flag.store(true, SeqCst),
            );
        });
        let t = r.claim().expect("a free slot");
        put_request(&r, t, 5);
        r.publish(t);
        notify_unless_polling(&polling, || {
            parker.notify();
        });
        let flags = block_on(poll_fn(|cx| r.poll(t, cx.waker())));
        assert_eq!(flags & CLOSED, 0);
        // SAFETY: DONE observed.
        let v = unsafe { r.with_data(t, |d| ring::take::<Arc<u64>>(&mut d.payload)) };
        assert_eq!(*v, 6);
        r.release(t);
        server.join().expect("server");
    });
}
