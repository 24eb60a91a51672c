//! What the Machine Manager's activation costs, measured beside Table 1's rows: a machine call to
//! a machine that holds no core (IMS makes the manager grant it the CPU of a sleeping holder), and
//! a short call to a machine with two workers whose awake worker is blocked in a long call (the
//! sleeping sibling takes it, or — with the sibling wake-up off — it waits for the busy one).

use super::aam::{noop_calls, Noop};
use super::{result, BenchConfig, BenchError, BenchResult};
use crate::block::block_on;
use crate::builder::MachineBuilder;
use crate::interface::{ConnectOptions, ServeOptions};
use crate::manager::{MachineManager, Policy};
use multios_host::{tsc, CpuSet};
use std::time::Duration;

fn failed(bench: &'static str) -> impl Fn(crate::task::TaskError) -> BenchError {
    move |e| BenchError::Failed {
        bench,
        what: e.to_string(),
    }
}

/// Two server machines share the server CPU under a Machine Manager (one holds it, the other
/// none; both sleep as soon as idle); the client calls them in turn, so every call reaches a
/// machine without a core and the manager grants it the CPU in the sender's IMS (or the holder
/// hands it over as it goes idle). Client and servers sleep when idle, as in the idle call.
pub fn coreless_call(cfg: &BenchConfig) -> Result<Vec<BenchResult>, BenchError> {
    const B: &str = "coreless call";
    if cfg.client_cpu == cfg.server_cpu {
        return Ok(Vec::new());
    }
    let server = |name: &str, active: bool| {
        MachineBuilder::new(name)
            .cpus(CpuSet([cfg.server_cpu].into()))
            .active_cpus(if active {
                CpuSet([cfg.server_cpu].into())
            } else {
                CpuSet::default()
            })
            .idle_spin(Duration::ZERO)
            .build()
    };
    let (x, y) = (
        server("bench-coreless-x", true)?,
        server("bench-coreless-y", false)?,
    );
    let manager = MachineManager::start(
        vec![x.handle(), y.handle()],
        Policy::Utilization,
        Duration::from_secs(3600),
    );
    let client = MachineBuilder::new("bench-coreless-client")
        .cpus(CpuSet([cfg.client_cpu].into()))
        .idle_spin(Duration::ZERO)
        .build()?;
    let (ex, ey) = (
        x.serve(Noop, ServeOptions::default())
            .connect(ConnectOptions::default()),
        y.serve(Noop, ServeOptions::default())
            .connect(ConnectOptions::default()),
    );
    let (n, warm) = (cfg.iterations, cfg.warmup);
    let (direct, total) =
        block_on(client.spawn("driver", noop_calls(vec![ey, ex], n, warm))).map_err(failed(B))?;
    let c = manager.move_counts();
    let how = format!(
        "machine call to a machine that holds no core (two machines share the server CPU; the Machine Manager grants it in the sender's IMS: {} grants on IMS, {} hand-overs by the idle holder, {} by the policy)",
        c.ims, c.idle, c.policy
    );
    Ok(vec![
        result(
            "aam_call_coreless_direct",
            &format!("{how}: time to issue"),
            &direct,
            1.0,
        ),
        result(
            "aam_call_coreless_total",
            &format!("{how}: issue to result"),
            &total,
            1.0,
        ),
    ])
}

/// A server machine with two workers on the server CPU, both asleep when idle. A long call
/// blocks one (`busy`: a sleeping system call its machine does not know of, as a page fault, a
/// lock or an unmarked blocking call would); a short call issued meanwhile is timed. With the
/// sibling wake-up the sender's IMS wakes the sleeping worker; without it the short call waits
/// for the busy worker to finish (`wake_idle_siblings(false)`).
pub fn behind_busy_worker(
    cfg: &BenchConfig,
    siblings: bool,
    busy: Duration,
) -> Result<BenchResult, BenchError> {
    const B: &str = "call behind a busy worker";
    let server = MachineBuilder::new("bench-pool")
        .cpus(CpuSet([cfg.server_cpu].into()))
        .workers_per_cpu(2)
        .idle_spin(Duration::ZERO)
        .wake_idle_siblings(siblings)
        .build()?;
    let client = MachineBuilder::new("bench-pool-client")
        .cpus(CpuSet([cfg.client_cpu].into()))
        .idle_spin(Duration::MAX)
        .build()?;
    let svc = server.serve(Noop, ServeOptions::default());
    let (long_ep, short_ep) = (
        svc.connect(ConnectOptions::default()),
        svc.connect(ConnectOptions::default()),
    );
    let samples = (cfg.iterations / 50).max(20);
    let lead = tsc::calibration().ticks(busy.as_secs_f64() / 10.0);
    let total = block_on(client.spawn("driver", async move {
        let mut total = Vec::with_capacity(samples);
        for _ in 0..samples + 2 {
            let long = long_ep.call("Noop::busy", move |_s| async move {
                std::thread::sleep(busy);
            });
            // Let the long call start on a worker before the short one is issued.
            let start = tsc::now();
            while tsc::now().wrapping_sub(start) < lead {
                std::hint::spin_loop();
            }
            let t0 = tsc::now();
            let _ = short_ep.call("Noop::short", |_s| async {}).await;
            total.push(tsc::now() - t0);
            let _ = long.await;
        }
        total.split_off(2)
    }))
    .map_err(failed(B))?;
    let (name, how) = if siblings {
        (
            "aam_call_behind_busy_worker",
            "a sleeping sibling is woken by the sender's IMS",
        )
    } else {
        (
            "aam_call_behind_busy_worker_no_sibling_wake",
            "sibling wake-up off: the call waits for the busy worker",
        )
    };
    Ok(result(
        name,
        &format!(
            "short machine call to a machine with two workers on one CPU while one is blocked in a {} µs call ({how}): issue to result",
            busy.as_micros()
        ),
        &total,
        1.0,
    ))
}
