//! Start-up calibration on the null system call (an unimplemented number, which only enters and
//! leaves the kernel):
//! - `E`, its untraced round trip seen from user space: the kernel entry/exit cost that the
//!   tracepoints cannot see, since they fire inside the kernel;
//! - `B`, the time the probes report for it while tracing: the fixed bias of the probes themselves.
//!
//! Every traced call is then reported as `raw − B + E`: a call that does nothing costs exactly what
//! it costs untraced, and a real call adds its in-kernel work on top.

use crate::ebpf::Probe;
use crate::error::ProfilerError;
use crate::sys;

const BATCHES: usize = 201;
const PER_BATCH: u64 = 100;

/// The median of `v` (multios-stats' rule), 0 when empty.
fn median(v: Vec<f64>) -> f64 {
    multios_stats::median(&v).unwrap_or(0.0)
}

/// `E`: median over batches of the mean untraced null-call round trip, in ns. (With probes attached,
/// the same function measures what they add to a call of the calling thread.)
pub fn untraced_null_ns() -> f64 {
    for _ in 0..PER_BATCH {
        sys::null_syscall();
    }
    let means = (0..BATCHES)
        .map(|_| {
            let t = std::time::Instant::now();
            for _ in 0..PER_BATCH {
                sys::null_syscall();
            }
            t.elapsed().as_nanos() as f64 / PER_BATCH as f64
        })
        .collect();
    median(means)
}

/// `B`: median over batches of the mean per-call time the probes report for the null call, in ns.
/// Traces the calling thread meanwhile, then clears every statistic it left.
pub fn probe_bias_ns(probe: &Probe) -> Result<f64, ProfilerError> {
    let nr = sys::NULL_SYSCALL as u32;
    let (tid, tgid) = (sys::gettid(), std::process::id());
    probe.set_correction(0)?;
    probe.seed(tid, tgid, false)?;
    let measured = (|| {
        let mut means = Vec::with_capacity(BATCHES);
        for _ in 0..BATCHES {
            let before = probe.call(nr)?;
            for _ in 0..PER_BATCH {
                sys::null_syscall();
            }
            let after = probe.call(nr)?;
            let n = after.count.saturating_sub(before.count);
            if n > 0 {
                means.push(after.total_ns.saturating_sub(before.total_ns) as f64 / n as f64);
            }
        }
        Ok::<_, ProfilerError>(means)
    })();
    probe.unseed(tid, tgid)?;
    probe.clear()?;
    let means = measured?;
    if means.is_empty() {
        return Err(ProfilerError::Ebpf {
            what: "calibration".into(),
            msg: "the probes saw none of the calibration calls (sys_enter/sys_exit tracepoints not firing?)"
                .into(),
        });
    }
    Ok(median(means))
}
