//! `multios profile`: trace a command (`profile [OPTIONS] -- CMD…`), or `import` / `merge` profiles.

mod import;
mod merge;
mod run;

use crate::output::{Format, Out, Table};
use multios_profile::Profile;
use multios_units::format_secs;

#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Args {
    #[command(subcommand)]
    sub: Option<Sub>,
    #[command(flatten)]
    trace: run::RunArgs,
}

#[derive(clap::Subcommand, Debug)]
enum Sub {
    /// Convert a `strace -c [-w] [-f]` or `perf trace -s` summary into a multios profile
    Import(import::ImportArgs),
    /// Merge per-rank profiles (e.g. prof.%r.json written under mpirun) into one, keeping per-rank detail
    Merge(merge::MergeArgs),
}

pub fn run(args: Args, out: &Out) -> super::Exit {
    match args.sub {
        Some(Sub::Import(a)) => import::run(a, out),
        Some(Sub::Merge(a)) => merge::run(a, out),
        None => run::run(args.trace, out),
    }
}

/// Prints a profile: the totals, then one row per system call sorted by g(s) (at most `limit` rows in
/// the human table); `--json` prints the whole profile.
pub fn print_profile(p: &Profile, out: &Out, limit: Option<usize>) -> anyhow::Result<()> {
    if out.format == Format::Json {
        return out.json(p);
    }
    let g = p.syscall_time_s();
    // a column the backend does not fill shows "-", not a measured-looking 0
    let records = |field: &str| p.collection.coverage.as_ref().is_none_or(|c| c.records(field));
    if out.format == Format::Table {
        let exit = match &p.exit {
            Some(e) if e.signal.is_some() => format!("killed by signal {}", e.signal.unwrap_or_default()),
            Some(e) => format!("exit code {}", e.code.unwrap_or_default()),
            None => "exit not recorded".into(),
        };
        outln!(
            "{}: {}  ({}, accuracy {}{}, {exit})",
            out.bold("profile"),
            crate::output::printable(&p.command.join(" ")),
            crate::output::printable(&p.collection.tool),
            crate::output::printable(&p.collection.accuracy),
            if p.collection.partial { ", PARTIAL" } else { "" }
        );
        outln!(
            "  wall = {}   C = {}   Σg = {}   p = {:.4}%   calls = {}   threads = {}",
            format_secs(p.wall_time_s),
            format_secs(p.compute_time_s),
            format_secs(g),
            p.p() * 100.0,
            p.syscall_count(),
            if records("threads") {
                p.threads.len().to_string()
            } else {
                "not recorded".into()
            }
        );
        if let Some(b) = p.collection.bias_ns_subtracted {
            outln!("  probe bias subtracted per call: {b:.0} ns");
        }
        outln!(
            "  coverage: {}",
            p.collection.coverage.as_ref().map_or_else(
                || "not recorded (schema 1 file or import)".to_string(),
                |c| c.summary()
            )
        );
    }
    let mut t = Table::new([
        "syscall", "n(s)", "g(s)", "mean", "min", "max", "errors", "% wall",
    ]);
    let rows = match (out.format, limit) {
        (Format::Table, Some(n)) => n,
        _ => usize::MAX,
    };
    for s in p.syscalls.iter().take(rows) {
        t.row([
            s.name.clone(),
            s.count.to_string(),
            out.secs(s.total_s),
            out.secs(s.mean_s()),
            s.min_s.map_or("-".into(), |v| out.secs(v)),
            s.max_s.map_or("-".into(), |v| out.secs(v)),
            if records("syscalls[].errors") {
                s.errors.to_string()
            } else {
                "-".into()
            },
            format!(
                "{:.3}",
                if p.wall_time_s > 0.0 {
                    100.0 * s.total_s / p.wall_time_s
                } else {
                    0.0
                }
            ),
        ]);
    }
    t.print(out);
    if out.format == Format::Table && rows < p.syscalls.len() {
        outln!("… {} more system calls", p.syscalls.len() - rows);
    }
    Ok(())
}
