//! The paper's microbenchmark: a task issues a no-op task (locally, or as a machine call to
//! another machine on another core) and waits on its future; direct cost = the time to issue,
//! total latency = issue to result.

use super::{result, BenchConfig, BenchError, BenchResult};
use crate::block::block_on;
use crate::builder::MachineBuilder;
use crate::interface::{ConnectOptions, Endpoint, ServeOptions};
use multios_host::{tsc, CpuSet};
use std::time::Duration;

fn collect<F>(h: crate::task::JoinHandle<F>, bench: &'static str) -> Result<F, BenchError> {
    block_on(h).map_err(|e| BenchError::Failed {
        bench,
        what: e.to_string(),
    })
}

/// Local task execution: spawn on the own machine (same core) and await, both machines active.
pub fn local_task(cfg: &BenchConfig) -> Result<Vec<BenchResult>, BenchError> {
    let m = MachineBuilder::new("bench-local")
        .cpus(CpuSet([cfg.client_cpu].into()))
        .idle_spin(Duration::MAX)
        .build()?;
    let h = m.handle();
    let (n, warm) = (cfg.iterations, cfg.warmup);
    let (direct, total) = collect(
        m.spawn("driver", async move {
            let mut direct = Vec::with_capacity(n);
            let mut total = Vec::with_capacity(n);
            for i in 0..n + warm {
                let t0 = tsc::now();
                let j = h.spawn("noop", async { tsc::now() });
                let t1 = tsc::now();
                let _ = j.await;
                let t2 = tsc::now();
                if i >= warm {
                    direct.push(t1 - t0);
                    total.push(t2 - t0);
                }
            }
            (direct, total)
        }),
        "local task",
    )?;
    Ok(vec![
        result(
            "aam_local_task_direct",
            "spawn a no-op task on the own machine: time to issue",
            &direct,
            1.0,
        ),
        result(
            "aam_local_task_total",
            "spawn a no-op task on the own machine and await its future",
            &total,
            1.0,
        ),
    ])
}

/// A server that does nothing: what the no-op machine calls of the benchmarks reach.
pub(super) struct Noop;

/// `n` no-op calls after `warm` unmeasured ones, call `i` on endpoint `i % eps.len()`: each call's
/// direct cost (until the call is issued) and total (until its result is back), in TSC ticks.
pub(super) async fn noop_calls(eps: Vec<Endpoint<Noop>>, n: usize, warm: usize) -> (Vec<u64>, Vec<u64>) {
    let mut direct = Vec::with_capacity(n);
    let mut total = Vec::with_capacity(n);
    for i in 0..n + warm {
        let t0 = tsc::now();
        let c = eps[i % eps.len()].call("Noop::noop", |_s| async { tsc::now() });
        let t1 = tsc::now();
        let _ = c.await;
        let t2 = tsc::now();
        if i >= warm {
            direct.push(t1 - t0);
            total.push(t2 - t0);
        }
    }
    (direct, total)
}

/// Calls per sample of the active machine call (and of the cache-line round trip it is compared
/// with): this machine's TSC advances in steps of ≈ 10 ns (24–25 ticks at 2.45 GHz), too coarse
/// for single round trips of 60–250 ns; a sample of 8 consecutive ones is divided by 8.
pub const ACTIVE_BATCH: usize = 8;

/// `n` samples of `batch` consecutive no-op calls each, after `warm` unmeasured calls: per
/// sample, the summed direct cost (until each call is issued) and the elapsed total, in TSC
/// ticks (divide by `batch` for one call).
///
/// The two are timed in separate samples, taken alternately: a total sample reads the clock only
/// before and after its `batch` calls, as the cache-line round trip it is compared with does,
/// and a direct sample reads it around each issue. Reading the clock twice per call inside the
/// total (≈ 11 ns a read here) made the instrument part of the call.
pub(super) async fn noop_call_batches(
    ep: Endpoint<Noop>,
    n: usize,
    warm: usize,
    batch: usize,
) -> (Vec<u64>, Vec<u64>) {
    for _ in 0..warm {
        let _ = ep.call("Noop::noop", |_s| async { tsc::now() }).await;
    }
    let mut direct = Vec::with_capacity(n);
    let mut total = Vec::with_capacity(n);
    for _ in 0..n {
        let t0 = tsc::now();
        for _ in 0..batch {
            let _ = ep.call("Noop::noop", |_s| async { tsc::now() }).await;
        }
        total.push(tsc::now() - t0);
        let mut issue = 0;
        for _ in 0..batch {
            let a = tsc::now();
            let c = ep.call("Noop::noop", |_s| async { tsc::now() });
            issue += tsc::now() - a;
            let _ = c.await;
        }
        direct.push(issue);
    }
    (direct, total)
}

/// A machine call from a client machine to a server machine on another core. `active`: both
/// poll forever (no IMS); otherwise both sleep as soon as they are idle (every call needs IMS).
pub fn machine_call(cfg: &BenchConfig, active: bool) -> Result<Vec<BenchResult>, BenchError> {
    call_between(cfg, active, None)
}

/// The active machine call with the client's polled wait turned off (`call_spin(ZERO)`): the
/// result wakes the client task through its machine's inject queue, as before the polled wait
/// existed; measured in the same run to show what the polled wait saves.
pub fn machine_call_woken(cfg: &BenchConfig) -> Result<Vec<BenchResult>, BenchError> {
    call_between(cfg, true, Some(Duration::ZERO))
}

fn call_between(
    cfg: &BenchConfig,
    active: bool,
    call_spin: Option<Duration>,
) -> Result<Vec<BenchResult>, BenchError> {
    let spin = if active { Duration::MAX } else { Duration::ZERO };
    let server = MachineBuilder::new("bench-server")
        .cpus(CpuSet([cfg.server_cpu].into()))
        .idle_spin(spin)
        .build()?;
    let mut client = MachineBuilder::new("bench-client")
        .cpus(CpuSet([cfg.client_cpu].into()))
        .idle_spin(spin);
    if let Some(c) = call_spin {
        client = client.call_spin(c);
    }
    let client = client.build()?;
    let ep = server
        .serve(Noop, ServeOptions::default())
        .connect(ConnectOptions::default());
    let (n, warm) = (cfg.iterations, cfg.warmup);
    // Active calls are timed in batches (see [`ACTIVE_BATCH`]); idle ones (tens of µs each, an
    // IMS per call) one by one, as the futex reference they are compared with.
    let batch = if active { ACTIVE_BATCH } else { 1 };
    let (direct, total) = collect(
        client.spawn("driver", noop_call_batches(ep, n, warm, batch)),
        "machine call",
    )?;
    let (tag, how) = if call_spin.is_some() {
        (
            "active_woken",
            "both machines polling, client task woken through its inject queue (no polled wait)",
        )
    } else if active {
        ("active", "both machines polling (no IMS)")
    } else {
        (
            "idle",
            "both machines asleep when idle (IMS: futex wake each way)",
        )
    };
    Ok(vec![
        result(
            &format!("aam_call_{tag}_direct"),
            &format!("machine call to another core, {how}: time to issue"),
            &direct,
            batch as f64,
        ),
        result(
            &format!("aam_call_{tag}_total"),
            &format!("machine call to another core, {how}: issue to result"),
            &total,
            batch as f64,
        ),
    ])
}

/// Core moves: two machines with workers on both CPUs, the server CPU moved back and forth
/// (`iterations / 10` moves, at least 10); from the decision until the receiving worker runs.
pub fn core_move(cfg: &BenchConfig) -> Result<Vec<BenchResult>, BenchError> {
    if cfg.client_cpu == cfg.server_cpu {
        return Ok(Vec::new());
    }
    let both = CpuSet([cfg.client_cpu, cfg.server_cpu].into());
    let build = |name: &str, active: usize| {
        MachineBuilder::new(name)
            .cpus(both.clone())
            .active_cpus(CpuSet([active].into()))
            .idle_spin(Duration::from_micros(50))
            .build()
    };
    let a = build("bench-move-a", cfg.server_cpu)?;
    let b = build("bench-move-b", cfg.client_cpu)?;
    let (ha, hb) = (a.handle(), b.handle());
    let mut ticks = Vec::new();
    let tpn = tsc::calibration().ticks_per_ns();
    for i in 0..(cfg.iterations / 10).max(10) {
        let (from, to) = if i % 2 == 0 { (&ha, &hb) } else { (&hb, &ha) };
        let m = crate::manager::move_core(cfg.server_cpu, from, to).map_err(|e| BenchError::Failed {
            bench: "core move",
            what: e.to_string(),
        })?;
        ticks.push((m.ns * tpn) as u64);
    }
    Ok(vec![result(
        "aam_core_move",
        "Machine Manager moves a CPU between two machines: decision until the receiving worker runs",
        &ticks,
        1.0,
    )])
}
