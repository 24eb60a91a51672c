//! What an emulated run reports: wall time, exit, delegated/local counts, delivered forwarding cost.

use std::collections::BTreeMap;

/// min / median / p99 / mean of a sample, seconds.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Summary {
    pub n: u64,
    pub min: f64,
    pub median: f64,
    pub p99: f64,
    pub mean: f64,
}

impl Summary {
    /// Summarises `v` (sorted in place); `None` when empty.
    pub fn of(v: &mut [f64]) -> Option<Summary> {
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        Some(Summary {
            n: v.len() as u64,
            min: v[0],
            median: multios_stats::median_sorted(v),
            p99: multios_stats::quantile(v, 0.99),
            mean: v.iter().sum::<f64>() / v.len() as f64,
        })
    }
}

/// How the program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

impl Exit {
    pub fn from_wait_status(st: libc::c_int) -> Exit {
        if libc::WIFSIGNALED(st) {
            Exit::Signal(libc::WTERMSIG(st))
        } else {
            Exit::Code(libc::WEXITSTATUS(st))
        }
    }

    /// The shell convention: the code, or 128 + signal.
    pub fn shell_code(self) -> i32 {
        match self {
            Exit::Code(c) => c,
            Exit::Signal(s) => 128 + s,
        }
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(c) => write!(f, "exit code {c}"),
            Exit::Signal(s) => write!(f, "signal {s}"),
        }
    }
}

/// Counts of one system call.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Counts {
    pub delegated: u64,
    /// `None` when the mechanism does not see local calls (`proxy`: the kernel lets them through).
    pub local: Option<u64>,
    /// Time spent in the local calls, seconds: only from [`crate::profile_run`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_secs: Option<f64>,
}

/// What the rewrite cache did in one run (docs/EMULATOR.md, "Rewrite cache"), summed over every
/// program image the run executed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RewriteCache {
    /// Executable file mappings patched from a cache entry (no scan, no decoding).
    pub hits: u64,
    /// Mappings classified by scanning and decoding, and stored.
    pub stored: u64,
}

/// The result of one emulated run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    pub command: Vec<String>,
    pub mechanism: String,
    pub policy: String,
    pub fc: String,
    pub compute_cpus: String,
    pub control_cpus: String,
    pub wall_secs: f64,
    /// User + system CPU time of the program and the descendants it waited for (not of the
    /// supervisors or delegate threads of the emulator).
    pub cpu_secs: f64,
    pub exit: Exit,
    pub delegated_total: u64,
    /// `None` when local calls are not observed by this mechanism.
    pub local_total: Option<u64>,
    pub syscalls: BTreeMap<String, Counts>,
    /// The one-way forwarding cost actually delivered by the spin (2 per delegated call), seconds.
    pub delivered_fc: Option<Summary>,
    /// Calls the policy delegated but the mechanism keeps local to preserve their semantics.
    pub forced_local: Vec<String>,
    /// shm/migrate: how calls were intercepted — "eager, SUD off", "eager, SUD on" (some 0f 05
    /// bytes could not be classified), "lazy" (or "lazy (fallback)" when eager was asked for).
    pub interception: Option<String>,
    /// shm/migrate with the eager interception: how the rewrite cache served the program's
    /// executable file mappings (`None`: no cache, `MULTIOS_REWRITE_CACHE=off`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rewrite_cache: Option<RewriteCache>,
    /// shm/migrate with the eager interception: the most `syscall` instructions one program image
    /// had in functions that keep data in the red zone under the stack pointer, which a rewritten
    /// site's `call` would overwrite (`csrc/rewrite.c`): left as they are, so with SUD off the calls
    /// made there run natively, neither counted nor delegated (with SUD on, through SIGSYS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub red_zone_sites: Option<u64>,
    pub warnings: Vec<String>,
    /// The signal (SIGINT, SIGTERM, SIGHUP) multios received while the program ran: it was
    /// forwarded to the program, which was waited for; the report is then partial.
    pub interrupted: Option<i32>,
    /// The counts may miss calls: multios was interrupted, or processes were killed by a signal
    /// before they could write their statistics.
    pub partial: bool,
}
