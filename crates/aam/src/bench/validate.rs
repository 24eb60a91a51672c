//! The model question of issue #11: should a workload's system calls go to the OS machine?
//!
//! [`project`] answers it from a profile's calls (n(s), g(s)), C and the measured one-way cost of
//! a machine call, with the project's refined model (`multios_model::refined`, eq. 4–11) taking
//! f_c = that one-way cost and every call delegated. [`validate`] checks the answer: a
//! syscall-heavy loop (compute, then a 64-byte `pread`) runs on the compute core with direct
//! system calls — which gives C and g(pread) — and then with each `pread` sent to the OS machine
//! on the other CPU; f_c is half the mean no-op machine call measured in the same run (a
//! total over n calls adds means, not medians).

use super::{BenchConfig, BenchError};
use crate::builder::MachineBuilder;
use crate::interface::ConnectOptions;
use crate::os::OsMachine;
use multios_host::{tsc, CpuSet};
use multios_model::{refined, ModelError, Params, Projection, Workload};
use std::collections::BTreeSet;
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
    /// Median no-op machine call (issue to result) between the two CPUs, ns.
    pub noop_call_median_ns: f64,
    /// Mean of the same samples, ns: the statistic a sum of n calls adds up (on a shared VM the
    /// mean carries the preemptions of the polling threads that the median hides).
    pub noop_call_mean_ns: f64,
    /// f_c = noop_call_mean_ns / 2, seconds.
    pub fc_s: f64,
    pub measured_direct_s: f64,
    pub measured_os_machine_s: f64,
    pub projection: Projection,
    /// projection.t_d.
    pub projected_os_machine_s: f64,
    /// (projected − measured) / measured, percent.
    pub error_pct: f64,
    pub within_5pct: bool,
    /// γ of the compute core while the OS machine polls on the other CPU: C of the direct run
    /// over the compute time measured between the calls of the OS-machine run (below 1 when the
    /// polling sibling slows the compute core down, e.g. two hyperthreads of one core).
    pub gamma_measured: f64,
    /// The refined model's t_d with that γ instead of 1, seconds.
    pub projected_with_gamma_s: f64,
    pub error_with_gamma_pct: f64,
    /// The f_c that would make the projection exact: (measured − C − Σg) / (2·n), seconds.
    pub implied_fc_s: f64,
    /// Should the calls go to the OS machine (projected speedup > 1)?
    pub offload_pays: bool,
}

fn compute(steps: u64, seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..steps {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    std::hint::black_box(x)
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

    // f_c from the same run: a no-op machine call between the two CPUs, both polling.
    let noop = super::machine_call(
        &BenchConfig {
            iterations: bench.iterations.min(5_000),
            ..bench.clone()
        },
        true,
    )?;
    let (noop_call_median_ns, noop_call_mean_ns) = noop
        .iter()
        .find(|r| r.name == "aam_call_active_total")
        .map(|r| (r.ns.median, r.ns.mean))
        .ok_or_else(|| failed("the no-op machine call produced no result".into()))?;

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
    let fc_s = noop_call_mean_ns * 1e-9 / 2.0;
    let projection = project(&workload, fc_s, 1.0).map_err(|e| failed(e.to_string()))?;
    let measured = secs(os_ticks);
    let err = |t: f64| {
        if measured > 0.0 {
            (t - measured) / measured * 100.0
        } else {
            0.0
        }
    };
    let error_pct = err(projection.t_d);
    let gamma_measured = if c_os_ticks > 0 {
        c_ticks as f64 / c_os_ticks as f64
    } else {
        1.0
    };
    let with_gamma = project(&workload, fc_s, gamma_measured).map_err(|e| failed(e.to_string()))?;
    Ok(Validation {
        config: *cfg,
        noop_call_median_ns,
        noop_call_mean_ns,
        fc_s,
        measured_direct_s: secs(direct_ticks),
        measured_os_machine_s: measured,
        projected_os_machine_s: projection.t_d,
        within_5pct: error_pct.abs() <= 5.0,
        implied_fc_s: (measured - workload.t_nd()) / (2.0 * n.max(1) as f64),
        gamma_measured,
        projected_with_gamma_s: with_gamma.t_d,
        error_with_gamma_pct: err(with_gamma.t_d),
        offload_pays: projection.speedup > 1.0,
        error_pct,
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
