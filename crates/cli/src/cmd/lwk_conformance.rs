//! `multios lwk conformance` (issue #14): CPython's regression tests and stress-ng natively and in
//! the LWK; the runs and the comparison are multios_experiment::conformance.

use crate::output::{Format, Out, Table};
use multios_experiment::conformance::{self, Config, Difference, Limits, Report};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// CPython test modules, comma-separated (default: the 18 of issue #14; `none` runs none)
    #[arg(long, value_delimiter = ',', value_name = "MODULES")]
    python: Option<Vec<String>>,
    /// Test-id patterns left out on both sides (`python -m test -i PATTERN`, repeatable);
    /// default: *VSOCK* (those tests hang natively on this VM); `--ignore none` leaves none out
    #[arg(long, value_name = "PATTERN")]
    ignore: Vec<String>,
    /// stress-ng stressors, comma-separated (default: 60 from the classes os, memory, interrupt,
    /// pipe, scheduler; `none` runs none)
    #[arg(long, value_delimiter = ',', value_name = "STRESSORS")]
    stress: Option<Vec<String>>,
    /// A small subset: test_fcntl and test_select, stressors pipe, fstat and yield (for the
    /// lists not given)
    #[arg(long)]
    quick: bool,
    /// Keep the logs and JUnit files of every run in DIR (default: a scratch directory, removed)
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    out_dir: Option<PathBuf>,
    /// Seconds each stressor runs (`stress-ng -t`)
    #[arg(long, default_value_t = 2)]
    stress_seconds: u64,
    /// Seconds one module may take on one side before its process tree is killed (a timeout)
    #[arg(long, default_value_t = 900)]
    module_timeout: u64,
    /// The interpreter whose test package is run (Debian's, with libpython3.11-testsuite)
    #[arg(long, default_value = "/usr/bin/python3.11")]
    python_bin: PathBuf,
    /// The stress-ng binary
    #[arg(long, default_value = "/usr/bin/stress-ng")]
    stress_ng: PathBuf,
    /// The known-limits table mapping differences to documented limits (default: the built-in
    /// crates/experiment/data/lwk-known-limits.txt)
    #[arg(long, value_name = "FILE")]
    known_limits: Option<PathBuf>,
    /// A flag for `multios lwk run` (repeatable), e.g. --lwk-arg=--mem-mib=8192
    #[arg(long, value_name = "FLAG", allow_hyphen_values = true)]
    lwk_arg: Vec<String>,
}

fn list(given: Option<Vec<String>>, quick: bool, full: &[&str], small: &[&str]) -> Vec<String> {
    match given {
        Some(v) if v.iter().any(|s| s == "none") => Vec::new(),
        Some(v) => v,
        None if quick => small.iter().map(|s| s.to_string()).collect(),
        None => full.iter().map(|s| s.to_string()).collect(),
    }
}

pub fn run(a: Args, out: &Out) -> crate::cmd::Exit {
    multios_lwk::check_kvm()?;
    let limits = match &a.known_limits {
        Some(f) => Limits::load(f)?,
        None => Limits::builtin()?,
    };
    let cfg = Config {
        python: a.python_bin,
        stress_ng: a.stress_ng,
        modules: list(
            a.python,
            a.quick,
            &conformance::MODULES,
            &conformance::QUICK_MODULES,
        ),
        ignore: match a.ignore.as_slice() {
            [] => conformance::IGNORED.iter().map(|s| s.to_string()).collect(),
            [none] if none == "none" => Vec::new(),
            given => given.to_vec(),
        },
        stressors: list(
            a.stress,
            a.quick,
            &conformance::STRESSORS,
            &conformance::QUICK_STRESSORS,
        ),
        stress_seconds: a.stress_seconds,
        module_timeout: Duration::from_secs(a.module_timeout),
        launcher: std::env::current_exe()?,
        lwk_args: a.lwk_arg,
        out_dir: a.out_dir,
        limits,
    };
    let r = conformance::run(&cfg, &mut crate::progress::Bar::new(out))?;
    let t = table(&r, out);
    match out.format {
        Format::Json => out.json(&r)?,
        Format::Csv => out!("{}", t.to_csv()),
        Format::Table => print_table(&r, &t, out),
    }
    Ok(if r.unexplained > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// One row per module and per stressor.
fn table(r: &Report, out: &Out) -> Table {
    let mut t = Table::new([
        "suite",
        "name",
        "native_run",
        "native_passed",
        "native_failed",
        "native_skipped",
        "native_status",
        "lwk_run",
        "lwk_passed",
        "lwk_failed",
        "lwk_skipped",
        "lwk_status",
        "differences",
        "unexplained",
    ]);
    let unexplained = |d: &[&Difference]| d.iter().filter(|d| d.cause.is_none()).count().to_string();
    for m in &r.python {
        let d: Vec<&Difference> = m.differences.iter().collect();
        let (n, l) = (&m.native, &m.lwk);
        t.row([
            "python".to_string(),
            m.module.clone(),
            n.run.to_string(),
            n.passed.to_string(),
            n.failed.to_string(),
            n.skipped.to_string(),
            format!("{} ({})", n.status, out.secs(n.seconds)),
            l.run.to_string(),
            l.passed.to_string(),
            l.failed.to_string(),
            l.skipped.to_string(),
            format!("{} ({})", l.status, out.secs(l.seconds)),
            d.len().to_string(),
            unexplained(&d),
        ]);
    }
    for s in &r.stress {
        let d: Vec<&Difference> = s.difference.iter().collect();
        let one = |o: conformance::Outcome, want: conformance::Outcome| u8::from(o == want).to_string();
        use conformance::Outcome::{Failed, Passed, Skipped};
        let (n, l) = (&s.native, &s.lwk);
        t.row([
            "stress-ng".to_string(),
            s.stressor.clone(),
            "1".to_string(),
            one(n.outcome, Passed),
            one(n.outcome, Failed),
            one(n.outcome, Skipped),
            n.status.clone(),
            "1".to_string(),
            one(l.outcome, Passed),
            one(l.outcome, Failed),
            one(l.outcome, Skipped),
            l.status.clone(),
            d.len().to_string(),
            unexplained(&d),
        ]);
    }
    t
}

fn print_table(r: &Report, t: &Table, out: &Out) {
    out!("{}", t.render(out));
    let diffs = r
        .python
        .iter()
        .flat_map(|m| m.differences.iter().map(move |d| (m.module.as_str(), d)))
        .chain(
            r.stress
                .iter()
                .filter_map(|s| s.difference.as_ref().map(|d| ("stress-ng", d))),
        );
    let mut any = false;
    for (suite, d) in diffs {
        if !any {
            outln!("\nDifferences (native → LWK) and their causes:");
            any = true;
        }
        let detail = if d.detail.is_empty() {
            String::new()
        } else {
            format!(" [{}]", d.detail)
        };
        let cause = match &d.cause {
            Some(c) => format!("limit:{} — {}", c.limit, c.why),
            None => out.paint_error("unexplained"),
        };
        outln!(
            "  {suite} {}: {} → {}{detail}: {cause}",
            d.id,
            d.native.as_str(),
            d.lwk.as_str()
        );
    }
    if let Some(dir) = &r.out_dir {
        outln!("\nlogs and JUnit files: {}", dir.display());
    }
    outln!(
        "\n{} difference(s): {} explained by a documented limit, {} unexplained",
        r.explained + r.unexplained,
        r.explained,
        r.unexplained
    );
}
