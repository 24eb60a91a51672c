//! References measured in the same run as the AAM numbers: the hardware's cache-line round trip,
//! a bare futex wake-and-reply, a system call, a thread switch, thread creation, Tokio and a
//! crossbeam channel.

use super::{result, BenchConfig, BenchError, BenchResult};
use crate::sys;
use multios_host::{cpus::pin_current_thread, tsc, CpuSet};
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// Runs `f` on a new thread pinned to `cpu`.
fn on_cpu<T: Send + 'static>(
    bench: &'static str,
    cpu: usize,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<std::thread::JoinHandle<T>, BenchError> {
    std::thread::Builder::new()
        .name(format!("bench:{cpu}"))
        .spawn(move || {
            let _ = pin_current_thread(&CpuSet([cpu].into()));
            f()
        })
        .map_err(|source| BenchError::Io { bench, source })
}

fn join<T>(bench: &'static str, h: std::thread::JoinHandle<T>) -> Result<T, BenchError> {
    h.join().map_err(|_| BenchError::Failed {
        bench,
        what: "a benchmark thread panicked".into(),
    })
}

/// Times `total` round trips of `step` (its argument is the round's index), keeping those after the
/// first `warm`; stops early when `step` returns false (the peer is gone).
fn timed_rounds(total: usize, warm: usize, mut step: impl FnMut(usize) -> bool) -> Vec<u64> {
    let mut s = Vec::with_capacity(total.saturating_sub(warm));
    for i in 0..total {
        let t0 = tsc::now();
        if !step(i) {
            break;
        }
        if i >= warm {
            s.push(tsc::now() - t0);
        }
    }
    s
}

#[repr(align(128))]
#[derive(Default)]
struct Line(AtomicU64);

/// A cache line written on the client CPU and answered from the server CPU, both spinning; each
/// sample is [`super::aam::ACTIVE_BATCH`] round trips (the TSC's ≈ 10 ns steps), divided.
pub fn cache_line(cfg: &BenchConfig) -> Result<BenchResult, BenchError> {
    const B: &str = "cache line";
    const K: u64 = super::aam::ACTIVE_BATCH as u64;
    let ball = Arc::new(Line::default());
    let total = (cfg.iterations + cfg.warmup) as u64;
    let b = ball.clone();
    let peer = on_cpu(B, cfg.server_cpu, move || {
        for i in 0..total * K {
            while b.0.load(Ordering::Acquire) != 2 * i + 1 {
                std::hint::spin_loop();
            }
            b.0.store(2 * i + 2, Ordering::Release);
        }
    })?;
    let warm = cfg.warmup;
    let me = on_cpu(B, cfg.client_cpu, move || {
        timed_rounds(total as usize, warm, |i| {
            for j in 0..K {
                let r = i as u64 * K + j;
                ball.0.store(2 * r + 1, Ordering::Release);
                while ball.0.load(Ordering::Acquire) != 2 * r + 2 {
                    std::hint::spin_loop();
                }
            }
            true
        })
    })?;
    let s = join(B, me)?;
    join(B, peer)?;
    Ok(result(
        "cache_line_round_trip",
        "a cache line written on one core, answered from the other (spinning; samples of 8)",
        &s,
        K as f64,
    ))
}

/// Two threads that sleep on futexes and wake each other; per round trip.
/// How long the client lets a peer that announced its futex wait get into it before a timed
/// round (the announcement comes just before the system call).
const SETTLE: std::time::Duration = std::time::Duration::from_micros(20);

fn futex_ping_pong(cfg: &BenchConfig, a: usize, b: usize) -> Result<Vec<u64>, BenchError> {
    const B: &str = "futex";
    // (reply, request, the peer is about to wait for a request)
    let words = Arc::new((AtomicU32::new(0), AtomicU32::new(0), AtomicU32::new(0)));
    let total = cfg.iterations + cfg.warmup;
    let w = words.clone();
    let peer = on_cpu(B, b, move || {
        for _ in 0..total {
            while w.1.load(Ordering::SeqCst) == 0 {
                w.2.store(1, Ordering::SeqCst);
                sys::futex_wait(&w.1, 0);
            }
            w.2.store(0, Ordering::SeqCst);
            w.1.store(0, Ordering::SeqCst);
            w.0.store(1, Ordering::SeqCst);
            sys::futex_wake(&w.0, 1);
        }
    })?;
    let warm = cfg.warmup;
    // Across cores the peer must be asleep when it is woken, or the round is a few hundred ns of
    // cache traffic instead of a wake-up (on a quiet machine most rounds were): wait, untimed,
    // until it announced its wait and a little longer. On one core it cannot run while the
    // client spins, and it sleeps anyway when the client waits for the reply.
    let settle = a != b;
    let me = on_cpu(B, a, move || {
        let mut s = Vec::with_capacity(total.saturating_sub(warm));
        for i in 0..total {
            if settle {
                while words.2.load(Ordering::SeqCst) == 0 {
                    std::hint::spin_loop();
                }
                let t = std::time::Instant::now();
                while t.elapsed() < SETTLE {
                    std::hint::spin_loop();
                }
            }
            let t0 = tsc::now();
            words.1.store(1, Ordering::SeqCst);
            sys::futex_wake(&words.1, 1);
            while words.0.load(Ordering::SeqCst) == 0 {
                sys::futex_wait(&words.0, 0);
            }
            words.0.store(0, Ordering::SeqCst);
            if i >= warm {
                s.push(tsc::now() - t0);
            }
        }
        s
    })?;
    let s = join(B, me)?;
    join(B, peer)?;
    Ok(s)
}

fn gettid(cfg: &BenchConfig) -> Result<BenchResult, BenchError> {
    const PER: usize = 100;
    let n = cfg.iterations;
    let s = join(
        "gettid",
        on_cpu("gettid", cfg.client_cpu, move || {
            (0..n)
                .map(|_| {
                    let t0 = tsc::now();
                    for _ in 0..PER {
                        std::hint::black_box(sys::gettid());
                    }
                    tsc::now() - t0
                })
                .collect::<Vec<_>>()
        })?,
    )?;
    Ok(result(
        "gettid",
        "the gettid system call (batches of 100, per call)",
        &s,
        PER as f64,
    ))
}

fn thread_create(cfg: &BenchConfig) -> Result<BenchResult, BenchError> {
    let n = cfg.iterations.min(5_000);
    let s = join(
        "thread create",
        on_cpu("thread create", cfg.client_cpu, move || {
            (0..n)
                .map(|_| {
                    let t0 = tsc::now();
                    let _ = std::thread::spawn(|| {}).join();
                    tsc::now() - t0
                })
                .collect::<Vec<_>>()
        })?,
    )?;
    Ok(result(
        "thread_create_join",
        "std::thread::spawn of an empty closure and join",
        &s,
        1.0,
    ))
}

fn tokio_current_thread(cfg: &BenchConfig) -> Result<BenchResult, BenchError> {
    const B: &str = "tokio current-thread";
    let (n, warm) = (cfg.iterations, cfg.warmup);
    let s = join(
        B,
        on_cpu(B, cfg.client_cpu, move || {
            let rt = tokio::runtime::Builder::new_current_thread().build();
            let rt = rt.map_err(|source| BenchError::Io { bench: B, source })?;
            Ok::<_, BenchError>(rt.block_on(async move {
                let mut s = Vec::with_capacity(n);
                for i in 0..n + warm {
                    let t0 = tsc::now();
                    let _ = tokio::spawn(async { tsc::now() }).await;
                    if i >= warm {
                        s.push(tsc::now() - t0);
                    }
                }
                s
            }))
        })?,
    )??;
    Ok(result(
        "tokio_current_thread_spawn_await",
        "Tokio current-thread runtime: spawn a no-op task and await it",
        &s,
        1.0,
    ))
}

/// Polls `fut` with a no-op waker until ready (a busy wait, so the caller's wake-up is free).
fn spin_on<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        std::hint::spin_loop();
    }
}

fn tokio_multi_thread(cfg: &BenchConfig) -> Result<BenchResult, BenchError> {
    const B: &str = "tokio multi-thread";
    let (n, warm) = (cfg.iterations, cfg.warmup);
    let s = join(
        B,
        on_cpu(B, cfg.client_cpu, move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .build();
            let rt = rt.map_err(|source| BenchError::Io { bench: B, source })?;
            let mut s = Vec::with_capacity(n);
            for i in 0..n + warm {
                let t0 = tsc::now();
                let _ = spin_on(rt.spawn(async { tsc::now() }));
                if i >= warm {
                    s.push(tsc::now() - t0);
                }
            }
            Ok::<_, BenchError>(s)
        })?,
    )??;
    Ok(result(
        "tokio_multi_thread_remote_spawn",
        "Tokio multi-thread runtime (2 workers): spawn from a non-worker thread, spin until done",
        &s,
        1.0,
    ))
}

fn crossbeam(cfg: &BenchConfig) -> Result<BenchResult, BenchError> {
    const B: &str = "crossbeam";
    let (to_tx, to_rx) = crossbeam_channel::bounded::<u64>(1);
    let (back_tx, back_rx) = crossbeam_channel::bounded::<u64>(1);
    let total = cfg.iterations + cfg.warmup;
    let peer = on_cpu(B, cfg.server_cpu, move || {
        while let Ok(v) = to_rx.recv() {
            if back_tx.send(v).is_err() {
                break;
            }
        }
    })?;
    let warm = cfg.warmup;
    let me = on_cpu(B, cfg.client_cpu, move || {
        timed_rounds(total, warm, |i| {
            to_tx.send(i as u64).is_ok() && back_rx.recv().is_ok()
        })
    })?;
    let s = join(B, me)?;
    join(B, peer)?;
    Ok(result(
        "crossbeam_channel_round_trip",
        "crossbeam bounded channels, one message there and back across cores",
        &s,
        1.0,
    ))
}

/// Every reference benchmark.
pub fn all(cfg: &BenchConfig) -> Result<Vec<BenchResult>, BenchError> {
    let mut out = vec![cache_line(cfg)?];
    let fx = futex_ping_pong(cfg, cfg.client_cpu, cfg.server_cpu)?;
    out.push(result(
        "futex_wake_reply_round_trip",
        "two threads on two cores sleeping on futexes, waking each other (round trip)",
        &fx,
        1.0,
    ));
    let cs = futex_ping_pong(cfg, cfg.client_cpu, cfg.client_cpu)?;
    out.push(result(
        "thread_context_switch",
        "two threads on one core waking each other via futex (round trip / 2)",
        &cs,
        2.0,
    ));
    out.push(gettid(cfg)?);
    out.push(thread_create(cfg)?);
    out.push(tokio_current_thread(cfg)?);
    out.push(tokio_multi_thread(cfg)?);
    out.push(crossbeam(cfg)?);
    Ok(out)
}
