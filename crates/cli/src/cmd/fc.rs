//! `multios fc` (issue #4): the paper's Table 3 forwarding microbenchmarks for each mechanism.

use crate::output::{Format, Out, Table};
use multios_emulate::{fc, Mechanism};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Trials per call (the minimum and median are reported)
    #[arg(long, default_value_t = 1000)]
    pub trials: usize,
    /// Mechanisms to measure (default: every one this build implements)
    #[arg(long, value_delimiter = ',')]
    pub mechanism: Vec<Mechanism>,
    /// CPU the benchmark runs on (default: the first available)
    #[arg(long, value_name = "LIST")]
    pub compute_cpus: Option<String>,
    /// CPU serving delegated calls (default: the last available)
    #[arg(long, value_name = "LIST")]
    pub control_cpus: Option<String>,
}

fn ns(s: f64) -> String {
    format!("{:.0}", s * 1e9)
}

pub fn run(args: Args, out: &Out) -> super::Exit {
    if args.trials == 0 {
        anyhow::bail!("--trials must be at least 1");
    }
    let (compute, control) =
        multios_experiment::setup::cpu_split(args.compute_cpus.as_deref(), args.control_cpus.as_deref())?;
    if compute.overlaps(&control) {
        eprintln!("warning: control CPUs {control} overlap compute CPUs {compute}");
    }
    let mechs: Vec<Mechanism> = if args.mechanism.is_empty() {
        Mechanism::ALL.into_iter().filter(|m| m.available()).collect()
    } else {
        args.mechanism.clone()
    };
    if let Some(m) = mechs.iter().find(|m| !m.available()) {
        anyhow::bail!(
            "mechanism '{}' is not available in this build: use proxy or migrate",
            m.name()
        );
    }
    let r = fc::run(&mechs, args.trials, &compute, &control)?;
    if out.format == Format::Json {
        out.json(&r)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut header = vec!["call".to_string(), "native min/med ns".to_string()];
    for m in &mechs {
        header.push(format!("{} min/med ns", m.name()));
        header.push(format!("{} added med ns", m.name()));
    }
    let mut t = Table::new(header);
    for (call, _) in fc::CALLS {
        let Some(nat) = r.get(call, "native") else {
            continue;
        };
        let mut row = vec![call.to_string(), format!("{}/{}", ns(nat.min), ns(nat.median))];
        for m in &mechs {
            match r.get(call, m.name()) {
                Some(s) => {
                    row.push(format!("{}/{}", ns(s.min), ns(s.median)));
                    row.push(ns(s.median - nat.median));
                }
                None => row.extend(["-".to_string(), "-".to_string()]),
            }
        }
        t.row(row);
    }
    let c = &r.cacheline;
    let mut row = vec![
        "cache-line round trip".to_string(),
        format!("{}/{}", ns(c.min), ns(c.median)),
    ];
    for _ in &mechs {
        row.extend(["".to_string(), "".to_string()]);
    }
    t.row(row);
    if out.format == Format::Table {
        println!(
            "Table 3 microbenchmarks, {} trials each, every call delegated at f_c = 0; program on CPU {}, \
             control CPU {} (console = /dev/null)",
            r.trials, r.compute_cpu, r.control_cpu
        );
    }
    t.print(out);
    Ok(ExitCode::SUCCESS)
}
