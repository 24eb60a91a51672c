//! `multios validate --workload NAME -- CMD …` and `--suite FILE` (issue #15): the models checked on
//! real programs. The experiment is multios_experiment::validate::real (one workload) and
//! multios_experiment::suite (a suite file); this prints the per-point and accuracy tables, writes
//! points.csv, accuracy.csv and the figures into --out, and prints the JSON.

use crate::output::{Format, Out, Table};
use multios_experiment::compare::{self, capture};
use multios_experiment::suite::{self, Suite};
use multios_experiment::validate::{real, realplots};
use multios_experiment::Progress;
use std::path::PathBuf;
use std::process::ExitCode;

/// A real-program validation, its flags resolved.
#[derive(Debug)]
pub struct Real {
    pub cfg: real::Config,
    /// `--workload NAME -- CMD …`.
    pub workload: Option<(String, Vec<std::ffi::OsString>)>,
    /// `--workload`'s `--workdir DIR`: each run gets a fresh copy (else the current directory).
    pub workdir: Option<PathBuf>,
    pub suite: Option<PathBuf>,
    pub quick: bool,
    pub only: Vec<String>,
    pub out: PathBuf,
}

pub fn run(r: Real, out: &Out) -> super::super::Exit {
    std::fs::create_dir_all(&r.out)
        .map_err(|e| anyhow::anyhow!("--out {}: cannot create it: {e}", r.out.display()))?;
    let mut bar = crate::progress::Bar::new(out);
    let (results, skipped, overall, measurements) = match (&r.workload, &r.suite) {
        (Some((name, argv)), _) => {
            let mut w = real::Workload::command(name, argv.clone());
            if let Some(d) = &r.workdir {
                if !d.is_dir() {
                    anyhow::bail!(
                        "--workdir {}: not a directory; give the directory each run gets a fresh copy of",
                        d.display()
                    );
                }
                w.workdir = Some(std::path::absolute(d)?);
            }
            // multios's stdin is the program's (`validate --workload wc -- wc -l < file`): captured
            // once and replayed to every run, as `emulate --compare` does; a terminal is not read.
            let scratch = capture::Scratch::new()?;
            let stdin = capture::capture_own_stdin(&scratch.0, compare::STDIN_CAP)?;
            if stdin.truncated {
                eprintln!(
                    "warning: stdin is longer than {} bytes: every run reads only its first {} bytes (give the program its input as a file argument instead)",
                    compare::STDIN_CAP,
                    compare::STDIN_CAP
                );
            }
            if stdin.bytes.is_some_and(|n| n > 0) {
                w.stdin = Some(stdin.file.clone());
            }
            let per = r.cfg.mechanisms.len() * r.cfg.fcs.len() * r.cfg.policies.len()
                + if r.cfg.lwk { r.cfg.policies.len() } else { 0 };
            bar.start(per as u64, "validate: targets × policies × f_c");
            let mut terms = real::micro::TermCache::default();
            let res = real::run_workload(&r.cfg, &w, &mut terms, &mut bar)?;
            bar.finish();
            let results = vec![res];
            let overall = real::overall(&results)?;
            (results, Vec::new(), overall, terms.measurements)
        }
        (None, Some(file)) => {
            let s = Suite::load(file)?;
            let cfg = suite::Config {
                validate: r.cfg.clone(),
                quick: r.quick,
                only: r.only.clone(),
                dir: std::env::temp_dir().join(format!("multios-suite-{}", std::process::id())),
            };
            let o = suite::run(&cfg, &s, &mut bar);
            std::fs::remove_dir_all(&cfg.dir).ok();
            let o = o?;
            (o.workloads, o.skipped, o.overall, o.term_measurements)
        }
        (None, None) => anyhow::bail!("give --workload NAME -- CMD … or --suite FILE"),
    };
    let terms = &r.cfg.terms;
    let mut points = Table::new(real::point_header(terms));
    for row in real::point_rows(&results, terms) {
        points.row(row);
    }
    let mut acc = Table::new(real::accuracy_header(terms));
    let all: Vec<real::Accuracy> = results
        .iter()
        .flat_map(|w| w.accuracy.iter().cloned())
        .chain(overall.iter().cloned())
        .collect();
    for row in real::accuracy_rows(&all, terms) {
        acc.row(row);
    }
    let mut micro = Table::new(real::table::MEASUREMENT_HEADER);
    for row in real::table::measurement_rows(&measurements) {
        micro.row(row);
    }
    std::fs::write(r.out.join("points.csv"), points.to_csv())?;
    std::fs::write(r.out.join("accuracy.csv"), acc.to_csv())?;
    if !measurements.is_empty() {
        std::fs::write(r.out.join("terms.csv"), micro.to_csv())?;
    }
    let figures = realplots::write(&results, &r.out)?;
    match out.format {
        Format::Json => out.json(&serde_json::json!({
            "workloads": results, "skipped": skipped, "overall": overall, "figures": figures,
            "term_measurements": measurements,
        }))?,
        Format::Csv => acc.print(out),
        Format::Table => {
            points.print(out);
            outln!();
            acc.print(out);
            if !measurements.is_empty() {
                outln!();
                // One line per term and its microbenchmark below it (the texts are too long for
                // a right-aligned table; terms.csv has them as columns).
                outln!("the terms, as their microbenchmarks measured them:");
                for m in &measurements {
                    outln!("  {:<12} {:<8} {}", m.target, m.term, m.value);
                    outln!("  {:<12} {:<8} ({})", "", "", m.how);
                }
            }
            for (name, why) in &skipped {
                outln!("skipped {name}: {why}");
            }
            for w in &results {
                for n in &w.notes {
                    outln!("note ({}): {n}", w.name);
                }
            }
            outln!(
                "points.csv, accuracy.csv{} and {} figure(s) in {}",
                if measurements.is_empty() {
                    ""
                } else {
                    ", terms.csv"
                },
                figures.len(),
                r.out.display()
            );
        }
    }
    if results.is_empty() {
        anyhow::bail!("no workload could be validated (see 'skipped')");
    }
    // A workload measured but with no valid point (every pair ended otherwise than the workload
    // should, or differently on the two sides) has no accuracy: it was not validated either.
    if results.iter().all(|w| w.accuracy.is_empty()) {
        let why: Vec<String> = results
            .iter()
            .flat_map(|w| {
                w.points.iter().filter_map(move |p| {
                    p.invalid
                        .as_ref()
                        .map(|i| format!("{} {}: {i}", w.name, p.target))
                })
            })
            .collect();
        anyhow::bail!(
            "no workload could be validated: no valid point to score{}",
            if why.is_empty() {
                String::new()
            } else {
                format!(" ({})", why.join("; "))
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}
