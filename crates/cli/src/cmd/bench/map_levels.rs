//! `multios bench map`: the calibration by cross-CPU level, and the accuracy of the three
//! calibrations (per level, pooled, a line in the round trip) side by side.

use crate::output::{Out, Table};
use multios_experiment::bench::map::calibrate::{Arrangement, Calibration};
use multios_experiment::bench::map::{predict::Accuracies, Report};

/// Wall µs per exchange of `a` at 2 KiB (or its only size) in `c`.
fn wall(c: &Calibration, a: Arrangement) -> String {
    let size = a.sizes().get(1).or(a.sizes().first()).copied().unwrap_or(0);
    c.samples
        .iter()
        .find(|s| s.arrangement == a && s.size == size)
        .map_or("-".into(), |s| format!("{:.2}", s.wall_us))
}

/// The table of the calibration at each level and the halves compared within one level.
pub fn print_levels(r: &Report, out: &Out) {
    let l = &r.levels;
    outln!(
        "Calibration by cross-CPU level (the round trip between the two CPUs probed before and after every calibration run; {} of {} runs saw two levels and are left out of the per-level fits):",
        l.unsteady_runs,
        r.calibration_runs.before.iter().chain(&r.calibration_runs.middle).chain(&r.calibration_runs.after).map(Vec::len).sum::<usize>()
    );
    let mut t = Table::new([
        "level ns",
        "two-CPU runs",
        "from every level",
        "split 2 KiB µs",
        "alone 2 KiB µs",
        "spread 12 2 KiB µs",
        "Linux 1 pair 2 KiB µs",
        "packed 2+2 2 KiB µs",
        "ns/message apart",
        "idle wake ns",
        "pair each CPU ×",
        "compute both ×",
    ]);
    let mut row = |name: String, runs: String, pooled: String, c: &Calibration| {
        t.row([
            name,
            runs,
            pooled,
            wall(c, Arrangement::Split),
            wall(c, Arrangement::Alone),
            wall(c, Arrangement::SpreadMany),
            wall(c, Arrangement::LinuxOne),
            wall(c, Arrangement::PackedFew),
            format!("{:.0}", c.cost.ns_per_event),
            format!("{:.0}", c.cost.ns_per_idle_wake),
            format!("{:.2}", c.parallel_ipc),
            format!("{:.2}", c.stretch_parallel),
        ]);
    };
    for f in &l.fits {
        row(
            format!("{:.0}", f.level_ns),
            f.runs.to_string(),
            f.pooled.len().to_string(),
            &f.calibration,
        );
    }
    row(
        "every level (pooled)".into(),
        "-".into(),
        "-".into(),
        &r.calibration,
    );
    t.print(out);
    let h = &l.halves;
    outln!(
        "  the halves (rounds before against after): {:.1} % over every arrangement, {:.1} % one-CPU, {:.1} % two-CPU, {:.1} % two-CPU within one level ({} compared); two-CPU runs per level, before / after: {}",
        100.0 * h.all,
        100.0 * h.one_cpu,
        100.0 * h.two_cpu,
        100.0 * h.two_cpu_same_level,
        h.compared_same_level,
        h.mix
            .iter()
            .map(|(ns, a, b)| format!("{ns:.0} ns {:.0}/{:.0} %", 100.0 * a, 100.0 * b))
            .collect::<Vec<_>>()
            .join(", ")
    );
    outln!(
        "  other tasks' CPU before / after: {:.1} / {:.1} % of the two CPUs, steal {:.1} / {:.1} %; each arrangement's own difference: {}",
        100.0 * h.others_share.0,
        100.0 * h.others_share.1,
        100.0 * h.steal_share.0,
        100.0 * h.steal_share.1,
        h.by_arrangement
            .iter()
            .map(|(a, d)| format!("{} {:.1} %", a.name(), 100.0 * d))
            .collect::<Vec<_>>()
            .join("; ")
    );
}

/// One line per accuracy of one calibration.
pub fn print_accuracies(what: &str, a: &Accuracies) {
    for (part, x) in [
        ("IPC rows, both placements", &a.ipc),
        ("IPC rows, round-robin", &a.ipc_round_robin),
        ("IPC rows, map", &a.ipc_map),
        ("IPC rows, Linux's placement (not judged)", &a.ipc_linux),
        ("programs (anchored)", &a.programs),
        ("programs, the model's own time (not judged)", &a.programs_model),
    ] {
        outln!(
            "    {what}, {part}: median |error| {:.1} %, largest {:.1} %, median bias {:+.1} %, {} of {} within ±10 %",
            100.0 * x.median_error,
            100.0 * x.max_error,
            100.0 * x.median_bias,
            x.within_10pct,
            x.compared
        );
    }
}
