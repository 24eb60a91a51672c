//! `multios bench multiverse` (issue #13): Multiverse's Fig. 9–12 on Racket, natively, in the LWK
//! and in the LWK with the clock overrides; the benchmark is multios_experiment::bench::multiverse.

use crate::output::{Format, Out, Table};
use multios_experiment::bench::multiverse::{self, Config};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Rounds: each runs native, LWK and LWK+overrides once, in rotated order (at least 6 for a
    /// 95 % interval of the paired ratios)
    #[arg(long, default_value_t = 6)]
    runs: usize,
    /// Small problem sizes (seconds instead of minutes; for tests)
    #[arg(long)]
    quick: bool,
    /// Only these benchmarks (binary-trees, fannkuch-redux, fasta, fasta-3, mandelbrot, n-body,
    /// spectral-norm)
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// The Racket interpreter
    #[arg(long, default_value = "/usr/bin/racket")]
    racket: std::path::PathBuf,
}

fn ci(c: Option<(f64, f64)>) -> String {
    c.map_or_else(|| "-".into(), |(lo, hi)| format!("[{lo:.3}, {hi:.3}]"))
}

pub fn run(a: Args, out: &Out) -> crate::cmd::Exit {
    let cfg = Config {
        runs: a.runs,
        quick: a.quick,
        only: a.only,
        multios: std::env::current_exe()?,
        racket: a.racket,
    };
    let r = multiverse::run(&cfg, &mut crate::progress::Bar::new(out))?;
    let mut fig9 = Table::new([
        "benchmark",
        "syscalls",
        "forwarded",
        "fwd_with_overrides",
        "user_s",
        "sys_s",
        "max_rss_MiB",
        "page_faults",
        "lwk_page_faults",
        "ctx_switches",
        "identical",
    ]);
    let mut fig10 = Table::new([
        "benchmark",
        "native_s",
        "lwk_s",
        "lwk_overrides_s",
        "lwk/native",
        "interval",
        "overrides/native",
        "interval",
        "measured_overhead_s",
        "projected_overhead_s",
    ]);
    for row in &r.rows {
        fig9.row([
            format!("{} {}", row.name, row.arg),
            row.syscalls.to_string(),
            row.forwarded.to_string(),
            row.forwarded_with_overrides.to_string(),
            out.num(row.native.user_s, 3),
            out.num(row.native.sys_s, 3),
            out.num(row.native.max_rss_kib / 1024.0, 1),
            out.num(row.native.page_faults, 0),
            out.num(row.lwk.page_faults, 0),
            out.num(row.native.context_switches, 0),
            if row.identical_output { "yes" } else { "NO" }.to_string(),
        ]);
        fig10.row([
            row.name.clone(),
            out.num(row.native.wall_s, 3),
            out.num(row.lwk.wall_s, 3),
            out.num(row.lwk_overrides.wall_s, 3),
            out.num(row.lwk_ratio, 3),
            ci(row.lwk_ci),
            out.num(row.overrides_ratio, 3),
            ci(row.overrides_ci),
            out.num(row.measured_overhead_s, 4),
            row.projected_overhead_s
                .map_or_else(|| "-".into(), |p| out.num(p, 4)),
        ]);
    }
    let m = &r.micro;
    match out.format {
        Format::Json => out.json(&r)?,
        Format::Csv => out!("{}{}", fig9.to_csv(), fig10.to_csv()),
        Format::Table => {
            outln!(
                "{}",
                out.bold(&format!("{} (medians of {} rounds)", r.racket, cfg.runs))
            );
            outln!(
                "{}",
                out.bold(
                    "Fig. 9: what each benchmark asks of the OS (native usage; calls counted by the LWK)"
                )
            );
            out!("{}", fig9.render(out));
            outln!();
            outln!(
                "{}",
                out.bold("Fig. 10: wall time native / LWK / LWK + clock overrides (median of the paired ratios, 95 % interval)")
            );
            out!("{}", fig10.render(out));
            outln!(
                "projected overhead: forwarded calls × (forwarded round trip − native call), the refined model's \
                 delegation term; measured: LWK − native median wall (start-up included)"
            );
            outln!();
            outln!("{}", out.bold("Fig. 11: events natively and in the LWK"));
            outln!(
                "mmap+munmap of 4 KiB: {:.0} ns natively, {:.0} ns in the LWK (served there, not forwarded; {} pairs)",
                m.mmap_native_ns,
                m.mmap_lwk_ns,
                m.mmap_pairs
            );
            outln!(
                "a forwarded call: {:.0} ns vs {:.0} ns native: {:.0} cycles added per event at {:.2} GHz (Multiverse: ≈ 1500)",
                m.forwarded_call_ns,
                m.native_call_ns,
                m.cycles_added_per_forward,
                m.tsc_hz * 1e-9
            );
            outln!(
                "Fig. 12: page faults taken for the program natively vs by the VMM in the LWK (guest memory is mapped \
                 before the run: the prefault is built in) are the page_faults columns of Fig. 9"
            );
        }
    }
    let bad: Vec<&str> = r
        .rows
        .iter()
        .filter(|x| !x.identical_output)
        .map(|x| x.name.as_str())
        .collect();
    if !bad.is_empty() {
        eprintln!(
            "multios bench multiverse: output differs from native for {}",
            bad.join(", ")
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
