//! `multios bench map` (issue #12): the calibration, the IPC microbenchmark under Linux, round-robin
//! and `map run`, real programs against Linux's placement, predicted beside measured, and the
//! projection; the body is multios_experiment::bench::map.

use crate::output::{Format, Out, Table};
use multios_experiment::bench::map::{self, Config, Program};
use multios_stats::Paired;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Process counts (even; pairs exchange messages)
    #[arg(long, value_delimiter = ',', default_value = "2,4,8,16,32")]
    procs: Vec<usize>,
    /// Message sizes in bytes
    #[arg(long, value_delimiter = ',', default_value = "1024,4096,16384,65536")]
    sizes: Vec<usize>,
    /// Exchanges per pair and run
    #[arg(long, default_value_t = 2000)]
    rounds: u64,
    /// Runs of each placement per IPC configuration (interleaved); 6 or more give an interval
    #[arg(long, default_value_t = 6)]
    repeats: usize,
    /// Rounds of the calibration microbenchmarks, before and after the rest (each)
    #[arg(long, default_value_t = 3)]
    calibration_rounds: usize,
    /// Real programs to run against Linux's placement (pipeline, make, prodcons, mpi; "none")
    #[arg(long, value_delimiter = ',', default_value = "pipeline,make,prodcons,mpi")]
    programs: Vec<String>,
    /// ABBA pairs of runs per real program (6 or more give an interval)
    #[arg(long, default_value_t = 8)]
    pairs: usize,
    /// ABBA pairs per short program (true, prodcons, a short pipeline) and mode (nothing pinned,
    /// all pinned) measuring map run's own cost; 0 skips that section
    #[arg(long, default_value_t = 10)]
    overhead_pairs: usize,
    /// map run's contention check of pinned groups (new threads are placed from process events)
    #[arg(long, default_value = "100ms")]
    sweep: multios_units::Duration,
    /// Projection: extra cost per hop beyond the calibrated distance (an assumption: not measurable on 2 CPUs)
    #[arg(long, default_value_t = 0.5)]
    per_hop: f64,
    /// Write the calibrated model here (JSON: the cost model, the measured curves and stretches;
    /// `multios map … --costs FILE` reads it, and `map run` then decides with the same model)
    #[arg(long)]
    costs: Option<std::path::PathBuf>,
    /// Scratch directory for the benchmark programs, inputs and outputs
    #[arg(long, default_value = "/tmp/multios-bench-map")]
    workdir: std::path::PathBuf,
}

fn ratio(p: &Paired) -> String {
    map::ratio_text(p)
}

/// Where a row stands against "never more than 3 % slower" (slower only when the whole interval
/// is above 1.03), and for an IPC row whether the ratio is within Linux's own A/A spread.
fn verdict(p: &Paired, aa: Option<&Paired>) -> String {
    let s = map::Standing::of(p).label();
    match aa.and_then(|a| map::within_aa(p, a)) {
        Some(true) => format!("{s} (within A/A)"),
        Some(false) => format!("{s} (outside A/A)"),
        None => s.to_string(),
    }
}

fn off(o: &Option<multios_map::programs::OffIdeal>) -> String {
    match o {
        Some(o) => format!(
            "{:.0}/{:.0}/{:.0}",
            100.0 * o.split,
            100.0 * o.moved,
            100.0 * o.excess
        ),
        None => "-".into(),
    }
}

/// What map run chose and the model's predicted speed-up of the placement over Linux's.
fn chose(d: &multios_map::decide::Decision) -> String {
    format!(
        "{} {:.2}×{}",
        if d.applies() { "placed" } else { "Linux" },
        d.predicted_speedup,
        d.least_favourable_speedup
            .map(|x| format!(" (least favourable {x:.2}×)"))
            .unwrap_or_default()
    )
}

fn err(pred: f64, meas: f64) -> String {
    format!("{:+.0} %", 100.0 * (pred - meas) / meas)
}

pub fn run(a: Args, out: &Out) -> crate::cmd::Exit {
    if let Some(p) = a.procs.iter().find(|&&p| p < 2 || p % 2 == 1) {
        anyhow::bail!("--procs: {p} is not an even count of at least 2 (processes exchange in pairs)");
    }
    if a.sizes.contains(&0) || a.sizes.is_empty() {
        anyhow::bail!("--sizes: message sizes must be at least 1 byte");
    }
    if a.rounds == 0 || a.repeats == 0 || a.pairs == 0 || a.calibration_rounds == 0 {
        anyhow::bail!("--rounds, --repeats, --pairs and --calibration-rounds must be at least 1");
    }
    crate::cmd::map::check_per_hop(a.per_hop)?;
    let mut programs = Vec::new();
    for name in &a.programs {
        match (name.as_str(), Program::parse(name)) {
            ("none", _) => {}
            (_, Some(p)) => programs.push(p),
            _ => anyhow::bail!(
                "--programs: unknown program '{name}'; one of pipeline, make, prodcons, mpi, none"
            ),
        }
    }
    if let Some(p) = &a.costs {
        multios_host::output::check_writable(p)
            .map_err(|e| anyhow::anyhow!("--costs {}: {e}", p.display()))?;
    }
    let cfg = Config {
        procs: a.procs,
        sizes: a.sizes,
        rounds: a.rounds,
        repeats: a.repeats,
        calibration_rounds: a.calibration_rounds,
        programs,
        pairs: a.pairs,
        overhead_pairs: a.overhead_pairs,
        sweep: std::time::Duration::from_secs_f64(a.sweep.secs().max(0.001)),
        per_hop: a.per_hop,
        workdir: a.workdir,
    };
    let r = map::run(&cfg, &mut crate::progress::Bar::new(out))?;
    if let Some(p) = &a.costs {
        std::fs::write(p, serde_json::to_string_pretty(&r.hop)? + "\n")
            .map_err(|e| anyhow::anyhow!("--costs {}: {e}", p.display()))?;
    }
    if out.format == Format::Json {
        out.json(&r)?;
        return Ok(ExitCode::SUCCESS);
    }
    let table = out.format == Format::Table;
    // 1. calibration
    if table {
        outln!(
            "Calibration ({} rounds before and {} after the rest, {} exchanges per pair in every run; medians per exchange):",
            cfg.calibration_rounds,
            cfg.calibration_rounds,
            r.calibration.rounds
        );
    }
    let mut t = Table::new(["microbenchmark", "size B", "wall µs", "CPU µs"]);
    for s in &r.calibration.samples {
        t.row([
            s.arrangement.name().to_string(),
            s.size.to_string(),
            format!("{:.2}", s.wall_us),
            format!("{:.2}", s.cpu_us),
        ]);
    }
    t.print(out);
    if table {
        let c = &r.calibration.cost;
        outln!(
            "  two CPUs: {:.0} ns per message + {:.3} ns per byte; one CPU: {:.0} ns + {:.3} ns per byte; idle wake-up {:.0} ns; shared page {:.0} ns per round trip apart; CPU share {:.2}",
            c.ns_per_event,
            c.ns_per_byte,
            c.local_ns_per_event,
            c.local_ns_per_byte,
            c.ns_per_idle_wake,
            c.ns_per_shared_page,
            r.calibration.cpu_share
        );
        outln!(
            "  the model: wall time per exchange at {} B per exchange (curves above); compute stretch {:.2} alone, {:.2} with both CPUs busy; a pair on one CPU ×{:.2} while the other CPU works; the calibration's halves differ by {:.1} % (median)",
            r.hop
                .curves
                .map(|c| c.bytes.iter().map(|b| format!("{b:.0}")).collect::<Vec<_>>().join(", "))
                .unwrap_or_else(|| "-".into()),
            r.calibration.stretch_one,
            r.calibration.stretch_parallel,
            r.calibration.parallel_ipc,
            100.0 * r.calibration_drift
        );
        outln!();
        super::map_levels::print_levels(&r, out);
        outln!();
        outln!(
            "IPC microbenchmark (seed 001 §III on pipes): µs per exchange, medians of {} interleaved runs of {} exchanges per pair; map/Linux: median of the paired ratios [95 % interval]; Linux/Linux: a second Linux run in each repeat against the first (A/A: the spread of one placement run twice)",
            cfg.repeats, cfg.rounds
        );
    }
    // 2. IPC rows
    let mut t = Table::new([
        "procs",
        "size",
        "Linux",
        "round-robin",
        "map",
        "map/Linux",
        "Linux/Linux (A/A)",
        "rr/Linux",
        "Linux split/moved/excess %",
        "map split/moved/excess %",
        "≤ 3 % slower?",
        "map chose (model Linux/placed; at the calibration's least favourable ends)",
        "map CPUs (procs)",
        "released",
        "level ns (retries)",
        "pred rr",
        "err rr",
        "pred map",
        "err map",
        "pred Linux",
        "err Linux",
        "err rr pooled",
        "err map pooled",
    ]);
    for row in &r.ipc {
        t.row([
            row.procs.to_string(),
            row.size.to_string(),
            format!("{:.2}", row.linux_us),
            format!("{:.2}", row.round_robin_us),
            format!("{:.2}", row.map_us),
            ratio(&row.map_vs_linux),
            ratio(&row.linux_vs_linux),
            format!("{:.3}", row.round_robin_vs_linux.ratio().0),
            off(&row.linux_off),
            off(&row.map_off),
            verdict(&row.map_vs_linux, Some(&row.linux_vs_linux)),
            chose(&row.map_decision),
            {
                // processes per CPU list, e.g. "0:8 1:8 0-1:1"
                let mut n: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
                for c in &row.map_cpus {
                    *n.entry(c.as_str()).or_default() += 1;
                }
                n.iter()
                    .map(|(c, k)| format!("{c}:{k}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            },
            format!("{}/{}", row.map_released_runs, cfg.repeats),
            {
                let ns: Vec<f64> = row.levels.iter().map(|l| l.level_ns).collect();
                let lo = ns.iter().copied().fold(f64::NAN, f64::min);
                let hi = ns.iter().copied().fold(f64::NAN, f64::max);
                let retries: usize = row.levels.iter().map(|l| l.retries).sum();
                let unsteady = row.levels.iter().filter(|l| !l.steady).count();
                format!(
                    "{lo:.0}–{hi:.0} ({retries}{})",
                    if unsteady > 0 {
                        format!(", {unsteady} unsteady")
                    } else {
                        String::new()
                    }
                )
            },
            format!("{:.2}", row.predicted_round_robin_us),
            err(row.predicted_round_robin_us, row.round_robin_us),
            format!("{:.2}", row.predicted_map_us),
            err(row.predicted_map_us, row.map_us),
            format!("{:.2}", row.predicted_linux_us),
            err(row.predicted_linux_us, row.linux_us),
            err(row.predicted_pooled.round_robin_us, row.round_robin_us),
            err(row.predicted_pooled.map_us, row.map_us),
        ]);
    }
    t.print(out);
    // 3. programs
    if !r.programs.is_empty() {
        if table {
            outln!();
            outln!(
                "Real programs: Linux's placement vs placed, {} ABBA pairs; seconds (medians)",
                cfg.pairs
            );
        }
        let mut t = Table::new([
            "program",
            "Linux s",
            "placed s",
            "placed/Linux",
            "fastest/fastest",
            "≤ 3 % slower?",
            "released",
            "predicted s",
            "err",
            "model placed s",
            "model Linux s",
            "level ns",
        ]);
        for p in &r.programs {
            t.row([
                p.program.name().to_string(),
                format!("{:.3}", p.linux_s),
                format!("{:.3}", p.map_s),
                ratio(&p.map_vs_linux),
                format!("{:.3}", 1.0 + p.map_vs_linux.fastest / 100.0),
                verdict(&p.map_vs_linux, None),
                format!("{}/{}", p.released_runs, cfg.pairs),
                format!("{:.3}", p.predicted_map_s),
                err(p.predicted_map_s, p.map_s),
                format!("{:.3}", p.model_map_s),
                format!("{:.3}", p.model_linux_s),
                match p.level_ns {
                    Some(ns) => format!("{ns:.0}{}", if p.level_steady { "" } else { " (moved)" }),
                    None => "-".into(),
                },
            ]);
        }
        t.print(out);
        if table {
            for p in &r.programs {
                outln!("  {}: {}", p.program.name(), p.command);
                outln!("    placed: {}", p.placed_command);
                outln!("    placement: {}", p.placement.join(" "));
                outln!("    decision: {}", p.decision.reason);
            }
        }
    }
    // map run's own cost
    if !r.overhead.is_empty() {
        if table {
            outln!();
            outln!(
                "map run's own cost: short programs under Linux and under map run, {} ABBA pairs; seconds (medians), map − Linux in ms",
                cfg.overhead_pairs
            );
        }
        let mut t = Table::new([
            "program",
            "mode",
            "Linux s",
            "map run s",
            "map/Linux",
            "map − Linux ms",
            "watched",
            "runner CPU µs",
            "events received",
        ]);
        for o in &r.overhead {
            let d = &o.map_minus_linux;
            t.row([
                o.program.clone(),
                o.mode.clone(),
                format!("{:.4}", o.linux_s),
                format!("{:.4}", o.map_s),
                ratio(&o.map_vs_linux),
                match d.ci {
                    Some((lo, hi)) => format!("{:+.2} [{:+.2}, {:+.2}]", 1e3 * d.median, 1e3 * lo, 1e3 * hi),
                    None => format!("{:+.2}", 1e3 * d.median),
                },
                if o.watched { "yes" } else { "no" }.to_string(),
                format!("{:.0}", o.runner_cpu_us),
                format!("{:.0}", o.received),
            ]);
        }
        t.print(out);
    }
    if !table {
        return Ok(ExitCode::SUCCESS);
    }
    // 4. projection
    outln!();
    outln!(
        "Projection (per-hop factor {} ASSUMED: this machine has one distance between CPUs):",
        r.per_hop_assumed
    );
    let mut p = Table::new([
        "topology",
        "workload",
        "procs",
        "strategy",
        "HOP_BYTE / treematch",
        "predicted ms",
    ]);
    for x in &r.projection {
        p.row([
            x.topology.clone(),
            x.workload.clone(),
            x.procs.to_string(),
            x.strategy.clone(),
            format!("{:.3}", x.hop_byte_vs_treematch),
            format!("{:.3}", x.predicted_ms),
        ]);
    }
    p.print(out);
    // 5. targets
    let v = &r.verdicts;
    outln!();
    outln!("Targets:");
    outln!(
        "  never more than 3 % slower than Linux: {} rows with the interval ≤ 1.03, {} with only the median, {} undecided (median above 1.03, interval reaching 1.03 or below){}, {} slower (the whole interval above 1.03){}",
        v.not_slower,
        v.not_slower_median_only,
        v.undecided.len(),
        if v.undecided.is_empty() {
            String::new()
        } else {
            format!(" ({})", v.undecided.join("; "))
        },
        v.slower.len(),
        if v.slower.is_empty() {
            String::new()
        } else {
            format!(" ({})", v.slower.join("; "))
        }
    );
    outln!(
        "    Linux against itself (A/A, a second Linux run in each repeat): {} of {} IPC rows have map/Linux within Linux/Linux's interval",
        v.within_aa,
        v.aa_rows
    );
    outln!(
        "  ≥ 1.3× faster where keeping communicating tasks together matters (Linux's placement ≥ {:.0} % from the best: split, moved or uneven), placed: {} of {} such IPC rows ({} of all {} IPC rows at ≥ 1.3×, placed or not)",
        100.0 * map::OFF_IDEAL_MATTERS,
        v.faster_1_3_where_matters,
        v.matters_rows,
        v.faster_1_3,
        v.ipc_rows
    );
    if !v.kept_together.is_empty() {
        outln!(
            "    Linux already placed the pairs as well as a placement can (together, not moved, even; judged by ≤ 3 % slower only): {}",
            v.kept_together.join(", ")
        );
    }
    if !v.linux_kept.is_empty() {
        outln!(
            "    map run kept Linux's placement (nothing pinned: both sides ran Linux's placement, their ratio is its run-to-run noise; ≥ 1.3× not counted there): {}",
            v.linux_kept.join(", ")
        );
    }
    if v.split_unknown > 0 {
        outln!(
            "    {} IPC rows without where the pairs ran (an older benchmark program)",
            v.split_unknown
        );
    }
    outln!(
        "  prediction within 10 % on the 2-CPU runs, each row by the calibration of the cross-CPU level probed around it → {} (the calibration's own halves differ by {:.1} %):",
        if v.prediction_within_10pct {
            "met"
        } else {
            "NOT met"
        },
        100.0 * r.calibration_drift
    );
    for (what, a) in [
        ("IPC rows, both placements", &r.accuracy_ipc),
        ("IPC rows, round-robin", &r.accuracy_ipc_round_robin),
        ("IPC rows, map", &r.accuracy_ipc_map),
        (
            "IPC rows, Linux's placement (what map run compares with; not judged)",
            &r.accuracy_ipc_linux,
        ),
        (
            "programs (Linux's time × the model's placed/Linux)",
            &r.accuracy_programs,
        ),
        (
            "programs, the model's own time (not judged)",
            &r.accuracy_programs_model,
        ),
    ] {
        outln!(
            "    {what}: median |error| {:.1} %, largest {:.1} %, median bias {:+.1} %, {} of {} within ±10 %",
            100.0 * a.median_error,
            100.0 * a.max_error,
            100.0 * a.median_bias,
            a.within_10pct,
            a.compared
        );
    }
    outln!("  the same rows by the calibration of every run whatever its level (the fit before), by the calibration as a line in the round trip, and per level for the crossing arrangements only (not judged):");
    super::map_levels::print_accuracies("pooled", &r.accuracy_pooled);
    super::map_levels::print_accuracies("line in the round trip", &r.accuracy_linear);
    super::map_levels::print_accuracies("per level, crossing arrangements only", &r.accuracy_crossing);
    for (w, x) in &v.hop_byte_128 {
        outln!(
            "  HOP_BYTE at 128 cores ({w}): affinity / TreeMatch-style = {x:.3} → {}",
            if *x <= 1.05 { "met" } else { "NOT met" }
        );
    }
    Ok(ExitCode::SUCCESS)
}
