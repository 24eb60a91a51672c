//! `multios bench profiler` (issue #3): tracing overhead of `multios profile` vs `strace -c -f` vs
//! `perf trace -s`, as wall-time (and CPU-time) ratios traced/untraced measured side by side in one
//! run; the probes' cost floor; the eBPF backend's per-call time against self-timing. The
//! measurements are multios_profiler::bench's; the tables, targets and verdicts are here.

use crate::{ExperimentError, Progress};
use multios_profiler::bench::{self, AccuracyRow, BenchConfig, FloorRow, Row};
use std::path::Path;

/// The overhead table's header.
pub const HEADER: [&str; 8] = [
    "workload",
    "tool",
    "untraced",
    "traced",
    "ratio",
    "ratio w/o start-up",
    "cpu ratio",
    "added/call",
];

/// The largest median paired difference, ns, at which the eBPF backend's per-call time is accurate.
pub const ACCURACY_NS: f64 = 50.0;

/// Runs every tool on every workload of `cfg` (its directory is removed afterwards); one progress
/// step per command timed.
pub fn run(cfg: &BenchConfig, progress: &mut dyn Progress) -> Result<Vec<Row>, ExperimentError> {
    progress.start(0, "bench profiler");
    let rows = bench::run(cfg, &mut |what: &str| {
        progress.advance(&format!("  running {what}"))
    });
    progress.finish();
    let _ = std::fs::remove_dir_all(&cfg.dir);
    Ok(rows?)
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.3}", a / b)
    } else {
        String::new()
    }
}

/// The overhead table's rows.
pub fn table_rows(rows: &[Row]) -> Vec<[String; 8]> {
    rows.iter()
        .map(|r| {
            [
                r.workload.clone(),
                r.tool.clone(),
                format!("{:.3} s", r.untraced_s),
                format!("{:.3} s", r.traced_s),
                format!("{:.3}", r.ratio),
                r.startup_s
                    .map_or(String::new(), |st| ratio(r.traced_s - st, r.untraced_s)),
                // perf trace's workload escapes RUSAGE_CHILDREN accounting: its CPU time is not comparable.
                if r.tool.starts_with("perf") {
                    "n/a".into()
                } else {
                    ratio(r.traced_cpu_s, r.untraced_cpu_s)
                },
                r.added_ns_per_call
                    .map_or(String::new(), |ns| format!("{ns:.0} ns")),
            ]
        })
        .collect()
}

/// The lines that set each multios backend's numbers beside its targets, and the start-up cost.
pub fn target_lines(rows: &[Row]) -> Vec<String> {
    let mut lines = Vec::new();
    for tool in ["multios (eBPF)", "multios (inproc)"] {
        let m = |w: &str| rows.iter().find(|r| r.workload.starts_with(w) && r.tool == tool);
        if let Some(a) = m("(a)") {
            lines.push(format!(
                "{tool} (a): added per call {:.0} ns (target ≤ 250), ratio {:.3} (target ≤ 1.3)",
                a.added_ns_per_call.unwrap_or_default(),
                a.ratio
            ));
        }
        if let Some(b) = m("(b)") {
            lines.push(format!(
                "{tool} (b): ratio {:.3} (target ≤ 1.02), cpu ratio {}",
                b.ratio,
                ratio(b.traced_cpu_s, b.untraced_cpu_s)
            ));
        }
    }
    if let Some(st) = rows.iter().find_map(|r| r.startup_s) {
        lines.push(format!(
            "multios (eBPF) start-up (probe loading and bias calibration, fitted from the two sizes of (a)): \
             {:.1} ms; each backend's added/call is the slope between the two sizes",
            st * 1e3
        ));
    }
    lines
}

/// `--floor`: the null call's cost with the probes' pieces attached one by one.
pub fn floor(reps: usize) -> Result<Vec<FloorRow>, ExperimentError> {
    Ok(bench::floor(reps)?)
}

/// The floor table's rows: what is attached, ns per call, added to the first row.
pub fn floor_rows(rows: &[FloorRow]) -> Vec<[String; 3]> {
    let base = rows.first().map_or(0.0, |r| r.ns_per_call);
    rows.iter()
        .map(|r| {
            [
                r.what.to_string(),
                format!("{:.1}", r.ns_per_call),
                format!("{:.1}", r.ns_per_call - base),
            ]
        })
        .collect()
}

/// One system call's accuracy check (`--accuracy --json` prints these; fields in the JSON's order).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Accuracy {
    pub counts_right: bool,
    pub paired_diff_ns: f64,
    pub pairs: usize,
    pub profiled_ns: f64,
    pub self_timed_ns: f64,
    pub syscall: &'static str,
    pub within_50ns: bool,
}

impl From<&AccuracyRow> for Accuracy {
    fn from(r: &AccuracyRow) -> Accuracy {
        Accuracy {
            counts_right: r.counts_right,
            paired_diff_ns: r.paired_diff_ns,
            pairs: r.pairs,
            profiled_ns: r.profiled_ns,
            self_timed_ns: r.self_timed_ns,
            syscall: r.syscall,
            within_50ns: r.paired_diff_ns.abs() <= ACCURACY_NS,
        }
    }
}

/// `--accuracy`: per-call times against self-timing in `pairs` paired runs (built in `dir`, which
/// is removed afterwards).
pub fn accuracy(dir: &Path, pairs: usize) -> Result<Vec<Accuracy>, ExperimentError> {
    let rows = bench::self_timing(dir, pairs);
    let _ = std::fs::remove_dir_all(dir);
    Ok(rows?.iter().map(Accuracy::from).collect())
}

/// The accuracy table's header.
pub const ACCURACY_HEADER: [&str; 7] = [
    "syscall",
    "pairs",
    "self-timed ns",
    "profiled ns",
    "median paired difference",
    "within 50 ns",
    "counts right",
];

/// The accuracy table's rows.
pub fn accuracy_rows(rows: &[Accuracy]) -> Vec<[String; 7]> {
    let yes = |b: bool| if b { "yes" } else { "no" }.to_string();
    rows.iter()
        .map(|r| {
            [
                r.syscall.to_string(),
                r.pairs.to_string(),
                format!("{:.1}", r.self_timed_ns),
                format!("{:.1}", r.profiled_ns),
                format!("{:+.1} ns", r.paired_diff_ns),
                yes(r.within_50ns),
                yes(r.counts_right),
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(tool: &str, workload: &str) -> Row {
        Row {
            workload: workload.into(),
            tool: tool.into(),
            calls: 1000,
            untraced_s: 1.0,
            traced_s: 1.2,
            ratio: 1.2,
            untraced_cpu_s: 1.0,
            traced_cpu_s: 1.1,
            added_ns_per_call: Some(120.0),
            startup_s: Some(0.1),
            command: "x".into(),
        }
    }

    #[test]
    fn perf_cpu_ratios_are_not_comparable() {
        let t = table_rows(&[row("perf trace -s", "(a) x"), row("strace -c -f", "(a) x")]);
        assert_eq!(t[0][6], "n/a");
        assert_eq!(t[1][6], "1.100");
        assert_eq!(t[1][5], "1.100");
        assert_eq!(t[1][7], "120 ns");
    }

    #[test]
    fn targets_are_stated_for_each_multios_backend_found() {
        let lines = target_lines(&[
            row("multios (eBPF)", "(a) calls"),
            row("multios (eBPF)", "(b) bzip2"),
        ]);
        assert!(
            lines[0].contains("added per call 120 ns (target ≤ 250)"),
            "{lines:?}"
        );
        assert!(lines[1].contains("(target ≤ 1.02)"), "{lines:?}");
        assert!(lines[2].contains("start-up"), "{lines:?}");
    }

    #[test]
    fn accuracy_verdict_is_within_50_ns_either_way() {
        let r = |d: f64| {
            Accuracy::from(&AccuracyRow {
                syscall: "getppid",
                pairs: 15,
                self_timed_ns: 100.0,
                profiled_ns: 100.0 + d,
                paired_diff_ns: d,
                counts_right: true,
            })
        };
        assert!(r(-50.0).within_50ns && r(50.0).within_50ns && !r(50.1).within_50ns);
        assert_eq!(accuracy_rows(&[r(-3.0)])[0][4], "-3.0 ns");
    }

    #[test]
    fn the_floor_adds_to_the_first_row() {
        let f = |what, ns_per_call| FloorRow { what, ns_per_call };
        let rows = floor_rows(&[f("none", 100.0), f("enter", 130.0)]);
        assert_eq!(rows[1][2], "30.0");
    }
}
