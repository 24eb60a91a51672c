//! Converting other tools' summaries into profiles.
//!
//! `strace -c` (optionally `-w`, `-f`) and `perf trace -s` print per-syscall totals but not the run's
//! wall time, so the caller supplies it (the paper took it from `time`); C is then wall − Σg, the
//! single-threaded reading of the paper's eq. 4.

mod perf;
mod perf_records;
mod records;
mod strace;

pub use records::{profile_of, CallRecord};

use crate::error::ProfileError;
use crate::format::{Profile, SyscallStats};

/// Which tool wrote the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    StraceSummary,
    PerfTraceSummary,
}

impl Format {
    /// Recognises the format from the text itself.
    pub fn detect(text: &str) -> Option<Format> {
        if text.lines().any(|l| l.trim_start().starts_with("% time")) {
            Some(Format::StraceSummary)
        } else if text.contains("Summary of events") {
            Some(Format::PerfTraceSummary)
        } else {
            None
        }
    }
}

/// What the caller knows that the summary does not say.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    pub command: Vec<String>,
    /// Wall time of the run (required: the summaries do not record it).
    pub wall_time_s: Option<f64>,
    /// Whether `strace` ran with `-w` (wall-clock per-call times). Detected from the text when absent.
    pub strace_wall_clock: Option<bool>,
}

/// `perf trace` records (one line per call, not the `-s` summary), if `text` is that.
pub fn perf_trace_records(origin: &str, text: &str) -> Option<Result<Vec<CallRecord>, ProfileError>> {
    perf_records::detect(text).then(|| perf_records::parse(origin, text))
}

/// Parses `text` (read from `origin`) into a profile: a `strace -c` or `perf trace -s` summary, or
/// `perf trace` records (which carry their own wall time; `opts.wall_time_s` is then not needed).
pub fn import(origin: &str, text: &str, opts: &ImportOptions) -> Result<Profile, ProfileError> {
    if Format::detect(text).is_none() {
        if let Some(records) = perf_trace_records(origin, text) {
            return records::profile_of(origin, "perf trace", opts.command.clone(), &records?);
        }
    }
    let format = Format::detect(text).ok_or_else(|| ProfileError::Import {
        path: origin.into(),
        line: 1,
        msg: "neither a `strace -c` table (a '% time' header), a `perf trace -s` summary ('Summary of events') \
              nor `perf trace` records ('  0.052 ( 0.007 ms): comm/tid name(…) = ret')"
            .into(),
    })?;
    let (syscalls, tool, wall_clock) = match format {
        Format::StraceSummary => (
            strace::parse(origin, text)?,
            "strace -c",
            opts.strace_wall_clock.unwrap_or(false),
        ),
        Format::PerfTraceSummary => (perf::parse(origin, text)?, "perf trace -s", true),
    };
    if syscalls.is_empty() {
        return Err(ProfileError::Import {
            path: origin.into(),
            line: 1,
            msg: format!("the {tool} summary has no syscall rows"),
        });
    }
    let wall = opts.wall_time_s.ok_or_else(|| ProfileError::Import {
        path: origin.into(),
        line: 0,
        msg: format!(
            "{tool} does not record the run's wall time: pass it with --wall (e.g. --wall 12.3s from `time`)"
        ),
    })?;
    let mut p = Profile::new(opts.command.clone(), tool, "imported");
    p.collection.source = Some(origin.to_string());
    p.collection.wall_clock_syscall_times = wall_clock;
    p.collection.notes.push(format!(
        "imported from {tool}; g(s) includes the tracer's per-call overhead (≈117 µs for strace, ≈25 µs for perf trace on the reference machine); C = wall − Σg"
    ));
    p.syscalls = syscalls;
    let g = p.syscall_time_s();
    p.wall_time_s = wall;
    if g > wall {
        p.collection.notes.push(format!(
            "Σg = {g:.6} s exceeds the wall time {wall:.6} s (several threads or processes?); C set to 0"
        ));
    }
    p.compute_time_s = (wall - g).max(0.0);
    p.sort();
    crate::load::validate(origin, &p)?;
    Ok(p)
}

/// Adds a parsed row (line `line` of `origin`) to `out`, summing rows for the same call (perf
/// prints one table per thread); counts that add up past 2^64 − 1 are an error naming the row
/// (they wrapped around before).
fn push_row(
    origin: &str,
    line: usize,
    out: &mut Vec<SyscallStats>,
    row: SyscallStats,
) -> Result<(), ProfileError> {
    match out.iter_mut().find(|s| s.name == row.name) {
        None => out.push(row),
        Some(s) => {
            let overflow = |what: &str| ProfileError::Import {
                path: origin.into(),
                line,
                msg: format!(
                    "the {what} of '{}' over its rows add up past 2^64 - 1: the file is corrupt",
                    row.name
                ),
            };
            s.count = s.count.checked_add(row.count).ok_or_else(|| overflow("calls"))?;
            s.total_s += row.total_s;
            s.errors = s
                .errors
                .checked_add(row.errors)
                .ok_or_else(|| overflow("errors"))?;
            s.min_s = match (s.min_s, row.min_s) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            s.max_s = match (s.max_s, row.max_s) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
        }
    }
    Ok(())
}

fn syscall_number(origin: &str, line: usize, name: &str) -> Result<u32, ProfileError> {
    multios_syscalls::by_name(name).ok_or_else(|| ProfileError::Import {
        path: origin.into(),
        line,
        msg: multios_syscalls::UnknownSyscall::new(name).to_string(),
    })
}
