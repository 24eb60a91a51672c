//! The model question of issue #11: should a workload's system calls go to the OS machine?
//!
//! [`project`] answers it from a profile's calls (n(s), g(s)), C and the measured one-way cost of
//! a machine call, with the project's refined model (`multios_model::refined`, eq. 4–11) taking
//! f_c = that one-way cost and every call delegated. [`validate`] checks the answer on a
//! syscall-heavy loop (compute, then a 64-byte `pread`): it runs on the compute core with direct
//! system calls — which gives C and g(pread) — and then with each `pread` sent to the OS machine
//! on the other CPU. The projection's inputs are measured in the same run but apart from the run
//! it predicts:
//! - f_c: half the median of a `pread`-shaped machine call that makes no system call (the same
//!   arguments in, a 64-byte `Vec` back), both machines polling;
//! - γ: the compute kernel's rate beside a thread spinning on the OS machine's core over its rate
//!   alone ([`super::beside`]);
//! - the stall per call (`multios_model::Term::Wakeup`, off in the paper's model): in the same
//!   beside phases, at the workload's own call spacing (its compute steps between two calls),
//!   how long a call waits, on average, beyond the usual cache-line transfer, because the OS
//!   machine's CPU was running something else; each delegated call pays it once.
//!
//! The report gives the paper's model (γ = 1), with the measured γ, and with γ and the stall, each
//! against the measurement; the `share` term (the fraction of compute chunks the spinner did not
//! run beside) is reported as a diagnostic.

use super::beside::{beside, xorshift as compute, Beside};
use super::{BenchConfig, BenchError};
use crate::builder::MachineBuilder;
use crate::interface::{ConnectOptions, ServeOptions};
use crate::os::OsMachine;
use multios_host::{tsc, CpuSet};
use multios_model::{corrected_t_d, refined, ModelError, Params, Projection, Terms, Workload};
use std::collections::BTreeSet;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::time::Duration;

/// The refined model's projection when every call of `w` goes to the OS machine, each paying
/// `call_one_way_s` twice (request and reply) on top of its g(s); `gamma` is the compute cores'
/// gain (1 when the compute core is the same kind of core running the same code).
pub fn project(w: &Workload, call_one_way_s: f64, gamma: f64) -> Result<Projection, ModelError> {
    let all: BTreeSet<String> = w.calls.iter().map(|c| c.name.clone()).collect();
    refined(w, &all, &Params::new(gamma, call_one_way_s))
}

crate::interface! {
    /// A `pread` that makes no system call: the machine call's cost with `pread`'s arguments and
    /// result, for f_c.
    pub trait NullPread as NullPreadClient {
        fn pread(&self, fd: i32, len: usize, offset: i64) -> io::Result<Vec<u8>>;
    }
}

struct NoSyscall;

impl NullPread for NoSyscall {
    async fn pread(&self, _fd: i32, len: usize, _offset: i64) -> io::Result<Vec<u8>> {
        Ok(vec![7u8; std::hint::black_box(len)])
    }
}

/// Issue to result of `n` `pread`-shaped machine calls without a system call, both machines
/// polling, after `warm` untimed ones; ns.
pub fn shaped_call(bench: &BenchConfig, n: usize, warm: usize, bytes: usize) -> Result<Vec<f64>, BenchError> {
    let server = MachineBuilder::new("shaped-server")
        .cpus(CpuSet([bench.server_cpu].into()))
        .idle_spin(Duration::MAX)
        .build()?;
    let client = MachineBuilder::new("shaped-client")
        .cpus(CpuSet([bench.client_cpu].into()))
        .idle_spin(Duration::MAX)
        .build()?;
    let c = NullPreadClient::new(
        server
            .serve(NoSyscall, ServeOptions::default())
            .connect(ConnectOptions::default()),
    );
    let ticks = crate::block_on(client.spawn("shaped-driver", async move {
        let mut s = Vec::with_capacity(n);
        for i in 0..n + warm {
            let t0 = tsc::now();
            let r = c.pread(3, bytes, 0).await;
            let t1 = tsc::now();
            std::hint::black_box(r.map(|v| v.map(|v| v.len())).ok());
            if i >= warm {
                s.push(t1 - t0);
            }
        }
        s
    }))
    .map_err(|e| failed(e.to_string()))?;
    let tpn = tsc::calibration().ticks_per_ns();
    Ok(ticks.iter().map(|&t| t as f64 / tpn).collect())
}

/// Phases of the beside microbenchmark, of each kind (alone, beside), and their length: 0.4 s
/// beside in all. On a loaded machine the OS machine's CPU is taken away rarely but for ms at a
/// time (another task's scheduler slice), so the stall's mean needs a sample long enough to
/// meet several such absences; 4 × 25 ms met none or one.
pub const BESIDE_PHASES: usize = 8;
pub const BESIDE_PHASE: Duration = Duration::from_millis(50);

/// Size of the syscall-heavy workload.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct ValidateConfig {
    /// Loop iterations, one `pread` each.
    pub calls: usize,
    /// Arithmetic steps of compute between two calls.
    pub compute_steps: u64,
    /// Bytes per `pread`.
    pub bytes: usize,
}

impl Default for ValidateConfig {
    fn default() -> Self {
        ValidateConfig {
            calls: 20_000,
            compute_steps: 2_000,
            bytes: 64,
        }
    }
}

/// Measured against projected.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Validation {
    pub config: ValidateConfig,
    /// The profile of the direct run: C and (n, g) of `pread`.
    pub workload: Workload,
    /// The `pread`-shaped machine call without a system call (issue to result), ns.
    pub call_median_ns: f64,
    pub call_mean_ns: f64,
    /// f_c = call_median_ns / 2, seconds (the descheduled spells the mean carries are the
    /// stall's, not the mechanism's).
    pub fc_s: f64,
    /// γ, the stall per call and u measured by the beside microbenchmark.
    pub beside: Beside,
    pub measured_direct_s: f64,
    pub measured_os_machine_s: f64,
    /// The paper's refined model, γ = 1: t_d and its error against the measurement (%).
    pub projected_plain_s: f64,
    pub error_plain_pct: f64,
    /// With the measured γ.
    pub projected_gamma_s: f64,
    pub error_gamma_pct: f64,
    /// With γ and the `share` term instead of the stall (a diagnostic: it counts every compute
    /// chunk the delegate missed as lost whole).
    pub projected_share_s: f64,
    pub error_share_pct: f64,
    /// With γ and the stall per call (the `wakeup` term): the projection the verdict judges.
    pub terms: Terms,
    pub projection: Projection,
    pub projected_os_machine_s: f64,
    /// (projected − measured) / measured, percent.
    pub error_pct: f64,
    pub within_5pct: bool,
    /// Diagnostics from inside the predicted run (not inputs of the projection): C of the
    /// direct run over the compute time between the calls of the OS-machine run, and the f_c
    /// that would make the γ-and-stall projection exact.
    pub run_gamma: f64,
    pub implied_fc_s: f64,
    /// Should the calls go to the OS machine (projected speedup with the terms > 1)?
    pub offload_pays: bool,
}

fn failed(what: String) -> BenchError {
    BenchError::Failed {
        bench: "aam validate",
        what,
    }
}

/// Runs the workload both ways on `bench`'s CPUs (client = compute core, server = OS machine).
pub fn validate(bench: &BenchConfig, cfg: &ValidateConfig) -> Result<Validation, BenchError> {
    let io = |source| BenchError::Io {
        bench: "aam validate",
        source,
    };
    let path = std::env::temp_dir().join(format!("multios-aam-validate-{}", std::process::id()));
    let file = std::fs::File::create_new(&path)
        .or_else(|_| {
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .truncate(true)
                .open(&path)
        })
        .map_err(io)?;
    let _cleanup = Remove(path.clone());
    file.write_all_at(&vec![7u8; cfg.bytes.max(1) * 4], 0)
        .map_err(io)?;
    let file = std::fs::File::open(&path).map_err(io)?;
    let fd = file.as_raw_fd();

    // f_c from the same run: a pread-shaped machine call without the system call.
    let mut call = shaped_call(bench, bench.iterations.min(5_000), 500, cfg.bytes)?;
    let call_mean_ns = call.iter().sum::<f64>() / call.len().max(1) as f64;
    call.sort_by(f64::total_cmp);
    let call_median_ns = call.get(call.len() / 2).copied().unwrap_or(0.0);

    // γ and the stall, apart from the predicted run, at the workload's call spacing.
    let side = beside(
        bench.client_cpu,
        bench.server_cpu,
        compute,
        cfg.compute_steps.max(1),
        BESIDE_PHASES,
        BESIDE_PHASE,
    )
    .map_err(io)?;

    let client = MachineBuilder::new("validate-compute")
        .cpus(CpuSet([bench.client_cpu].into()))
        .idle_spin(Duration::MAX)
        .build()?;

    // Direct: system calls on the compute core; C and g measured around each piece.
    let (n, steps, len) = (cfg.calls, cfg.compute_steps, cfg.bytes);
    let direct = crate::block_on(client.spawn("validate-direct", async move {
        let (mut c, mut g, mut bad) = (0u64, 0u64, 0usize);
        let mut buf = vec![0u8; len];
        let start = tsc::now();
        for i in 0..n {
            let t0 = tsc::now();
            compute(steps, i as u64);
            let t1 = tsc::now();
            bad += usize::from(file.read_at(&mut buf, 0).map_or(true, |k| k != len));
            let t2 = tsc::now();
            c += t1 - t0;
            g += t2 - t1;
        }
        (tsc::now() - start, c, g, bad, file)
    }))
    .map_err(|e| failed(e.to_string()))?;
    let (direct_ticks, c_ticks, g_ticks, bad_direct, file) = direct;

    // Through the OS machine on the other CPU, both sides polling.
    let os = OsMachine::start(bench.server_cpu, 1, Duration::MAX, 32)?;
    let osc = os.client(ConnectOptions::default());
    let via = crate::block_on(client.spawn("validate-os-machine", async move {
        let (mut bad, mut c) = (0usize, 0u64);
        let start = tsc::now();
        for i in 0..n {
            let t0 = tsc::now();
            compute(steps, i as u64);
            c += tsc::now() - t0;
            bad += usize::from(!matches!(osc.pread(fd, len, 0).await, Ok(Ok(v)) if v.len() == len));
        }
        (tsc::now() - start, bad, c)
    }))
    .map_err(|e| failed(e.to_string()))?;
    drop(os);
    drop(file);
    let (os_ticks, bad_os, c_os_ticks) = via;
    if bad_direct + bad_os > 0 {
        return Err(failed(format!(
            "{bad_direct} direct and {bad_os} OS-machine preads of {len} bytes came back short or failed"
        )));
    }

    let secs = |t: u64| tsc::calibration().secs(t);
    let workload = Workload {
        c: secs(c_ticks),
        calls: vec![multios_model::Call {
            name: "pread64".into(),
            n: n as u64,
            g: secs(g_ticks),
        }],
    };
    let fc_s = call_median_ns * 1e-9 / 2.0;
    let measured = secs(os_ticks);
    let err = |t: f64| {
        if measured > 0.0 {
            (t - measured) / measured * 100.0
        } else {
            0.0
        }
    };
    let model = |g: f64| project(&workload, fc_s, g).map_err(|e| failed(e.to_string()));
    let plain = model(1.0)?;
    let gamma = if side.gamma > 0.0 { side.gamma } else { 1.0 };
    let projection = model(gamma)?;
    let stall_s = side.stall_ns * 1e-9;
    let terms = Terms {
        wakeup_s: Some(stall_s),
        ..Terms::none()
    };
    let full = corrected_t_d(&projection, &terms);
    let with_share = corrected_t_d(
        &projection,
        &Terms {
            share: Some(side.share),
            ..Terms::none()
        },
    );
    let error_pct = err(full);
    let run_gamma = if c_os_ticks > 0 {
        c_ticks as f64 / c_os_ticks as f64
    } else {
        1.0
    };
    let implied_fc_s = (measured
        - n as f64 * stall_s
        - workload.c / gamma
        - workload.calls.iter().map(|c| c.g).sum::<f64>())
        / (2.0 * n.max(1) as f64);
    Ok(Validation {
        config: *cfg,
        call_median_ns,
        call_mean_ns,
        fc_s,
        beside: side,
        measured_direct_s: secs(direct_ticks),
        measured_os_machine_s: measured,
        projected_plain_s: plain.t_d,
        error_plain_pct: err(plain.t_d),
        projected_gamma_s: projection.t_d,
        error_gamma_pct: err(projection.t_d),
        projected_share_s: with_share,
        error_share_pct: err(with_share),
        offload_pays: projection.t_nd > full,
        terms,
        projected_os_machine_s: full,
        within_5pct: error_pct.abs() <= 5.0,
        error_pct,
        run_gamma,
        implied_fc_s,
        workload,
        projection,
    })
}

struct Remove(std::path::PathBuf);

impl Drop for Remove {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_projection_adds_two_one_way_costs_per_call() -> Result<(), ModelError> {
        let w = Workload {
            c: 1.0,
            calls: vec![multios_model::Call {
                name: "pread64".into(),
                n: 1000,
                g: 0.5,
            }],
        };
        let p = project(&w, 1e-6, 1.0)?;
        assert!((p.t_d - (1.0 + 0.5 + 2.0 * 1e-6 * 1000.0)).abs() < 1e-12);
        assert!(p.speedup < 1.0);
        Ok(())
    }
}
