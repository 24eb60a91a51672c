//! `multios emulate` (issue #4): run a program with chosen system calls delegated to control CPUs.

use crate::output::{Format, Out, Table};
use anyhow::Context;
use multios_emulate::{Config, Mechanism, Report};
use multios_experiment::compare;
use multios_experiment::setup::{cost_model, cpu_split, fc_or_zero, resolve_delegation};
use multios_units::format_secs;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Which calls are delegated: all, none, mckernel, mos, mktrace, list:FILE, least:F, most:F,
    /// random:F[:SEED] (the last three need --profile)
    #[arg(long)]
    pub policy: String,
    /// One-way forwarding cost f_c (paid there and back): DURATION (10us), exp:MEAN or samples:FILE.
    /// Required unless the policy delegates nothing (--policy none)
    #[arg(long, allow_hyphen_values = true)]
    pub fc: Option<String>,
    /// Per-syscall f_c, NAME=COST (repeatable), e.g. --fc-syscall write=50us (`model` spells it
    /// --fc-for; both spellings work on both commands)
    #[arg(
        long,
        visible_alias = "fc-for",
        value_name = "NAME=COST",
        allow_hyphen_values = true
    )]
    pub fc_syscall: Vec<String>,
    /// shm (shared-memory mailbox to a delegate thread, FlexSC-like), proxy (seccomp user
    /// notification, McKernel-like) or migrate (thread migration, mOS-like)
    /// (default: shm for a dynamically linked program, proxy for a static one)
    #[arg(long)]
    pub mechanism: Option<Mechanism>,
    /// CPUs the program runs on (default: the first available)
    #[arg(long, value_name = "LIST")]
    pub compute_cpus: Option<String>,
    /// CPUs serving delegated calls (default: the last available)
    #[arg(long, value_name = "LIST")]
    pub control_cpus: Option<String>,
    /// Profile for fraction policies (least:/most:/random:); `lwk run` spells it --policy-profile
    #[arg(long, visible_alias = "policy-profile")]
    pub profile: Option<PathBuf>,
    /// Also run natively and compare the measured speedup with the naïve and refined predictions:
    /// --runs pairs in ABBA order, every run with the same stdin (captured once, replayed) and its
    /// own captured output (compared between runs; the first native run's is shown once)
    #[arg(long)]
    pub compare: bool,
    /// --compare: pairs of runs (native + emulated); 6 or more give a 95 % interval
    #[arg(long, value_name = "N", default_value_t = multios_experiment::compare::DEFAULT_PAIRS)]
    pub runs: usize,
    /// --compare: copy DIR afresh for every run and run the program inside the copy
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,
    /// --compare: shell command run before every run (inside the --workdir copy if any)
    #[arg(long, value_name = "CMD")]
    pub setup: Option<String>,
    /// --compare: shell command run after every run (inside the --workdir copy if any)
    #[arg(long, value_name = "CMD")]
    pub cleanup: Option<String>,
    /// Accept an f_c below the mechanism's floor (the delivered cost is then the mechanism's own)
    #[arg(long)]
    pub allow_below_floor: bool,
    /// proxy: the supervisor busy-polls instead of sleeping until a call arrives (lower floor, but
    /// on a VM it slows the compute CPU)
    #[arg(long)]
    pub busy_supervisor: bool,
    /// No SCHED_IDLE spinners keeping CPUs from halting (proxy: on the compute CPU while it waits;
    /// migrate: on the compute and control CPUs between the thread's moves)
    #[arg(long)]
    pub no_idle_spin: bool,
    /// proxy: supervisors at normal priority instead of SCHED_FIFO
    #[arg(long)]
    pub no_realtime: bool,
    /// Run the program itself SCHED_FIFO (also the --compare native run), so other processes on
    /// the compute CPU do not delay it
    #[arg(long)]
    pub realtime_app: bool,
    /// shm/migrate: do not rewrite `syscall` instructions into trampoline calls (every call then
    /// raises SIGSYS, ≈ 2 µs each)
    #[arg(long)]
    pub no_rewrite: bool,
    /// shm/migrate: eager (rewrite every `syscall` at start-up, Syscall User Dispatch off: the
    /// lowest pass-through cost) or lazy (SUD on, sites rewritten at their first call). Default:
    /// MULTIOS_EMU_INTERCEPT, else eager (lazy when address 0 cannot be mapped)
    #[arg(long, value_name = "eager|lazy")]
    pub interception: Option<multios_emulate::Interception>,
    /// Write the report (table, --json or --csv) to FILE instead of stderr (table) / stdout (JSON, CSV);
    /// the global --results FILE does the same for every command
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// The program and its arguments (after --), passed to it as given (any bytes)
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(serde::Serialize)]
struct Json<'a> {
    #[serde(flatten)]
    report: &'a Report,
    compare: Option<&'a compare::Outcome>,
}

pub fn run(args: Args, out: &Out) -> super::Exit {
    let (compute, control) = cpu_split(args.compute_cpus.as_deref(), args.control_cpus.as_deref())?;
    let d = resolve_delegation(&args.policy, args.profile.as_deref())?;
    let fc = fc_or_zero(args.fc.as_deref(), &args.policy, &d)?;
    if let Some(f) = &args.report {
        multios_emulate::check_writable(f, "--report")?;
    }
    let cfg = Config {
        mechanism: args.mechanism.unwrap_or_else(|| {
            multios_emulate::default_mechanism(
                args.command
                    .first()
                    .map_or(std::ffi::OsStr::new(""), |a| a.as_os_str()),
            )
        }),
        delegation: d,
        cost: cost_model(fc, &args.fc_syscall)?,
        compute,
        control,
        argv: args.command.clone(),
        allow_below_floor: args.allow_below_floor,
        rewrite: !args.no_rewrite,
        wait: multios_emulate::Wait {
            busy_supervisor: args.busy_supervisor,
            idle_spinner: !args.no_idle_spin,
            realtime: !args.no_realtime,
            app_realtime: args.realtime_app,
        },
    };
    for w in cfg.check()? {
        eprintln!("warning: {w}");
    }
    let interception = match args.interception {
        Some(i) => i,
        None => multios_emulate::Interception::from_env()?,
    };
    if !args.compare {
        if args.workdir.is_some() || args.setup.is_some() || args.cleanup.is_some() {
            anyhow::bail!("--workdir, --setup and --cleanup make the runs of --compare alike: add --compare");
        }
        let report = multios_emulate::run_with(&cfg, interception)?;
        warn(&report);
        return finish(&args, out, &report, None);
    }
    let outcome = compare::run(&compare::Setup {
        emulate: &cfg,
        interception,
        pairs: args.runs,
        workdir: args.workdir.clone(),
        setup: args.setup.clone(),
        cleanup: args.cleanup.clone(),
    })?;
    warn(&outcome.report);
    // The program's output, once: the first native run's, now that every run is over.
    outcome.show_output(&mut std::io::stdout().lock(), &mut std::io::stderr().lock())?;
    if outcome.stdin.truncated {
        eprintln!(
            "warning: stdin is longer than {} bytes: every run read only its first {} bytes",
            compare::STDIN_CAP,
            compare::STDIN_CAP
        );
    }
    for d in &outcome.output_differences {
        eprintln!(
            "warning: run {} ({}) wrote a different {} from the first native run's, from byte {} on",
            d.run + 1,
            d.side,
            d.stream,
            d.offset
        );
    }
    let code = finish(&args, out, &outcome.report, Some(&outcome))?;
    if let Some(why) = &outcome.invalid {
        anyhow::bail!("the comparison is invalid: {why}");
    }
    Ok(code)
}

fn warn(report: &Report) {
    for w in &report.warnings {
        if !w.contains("overlap") {
            eprintln!("warning: {w}");
        }
    }
}

/// Writes the report and returns the exit code: the program's own (or the shell's code for the
/// signal that interrupted it).
fn finish(args: &Args, out: &Out, report: &Report, compare: Option<&compare::Outcome>) -> super::Exit {
    let text = match out.format {
        Format::Json => serde_json::to_string_pretty(&Json { report, compare })? + "\n",
        Format::Csv => per_syscall(report).to_csv(),
        Format::Table => table_text(report, compare, out),
    };
    match (&args.report, out.format) {
        (Some(f), _) => std::fs::write(f, text).with_context(|| format!("--report {}", f.display()))?,
        // The program owns stdout; the human report goes to stderr (or to the `--results` file).
        (None, Format::Table) if !crate::stdout::to_file() => eprint!("{text}"),
        (None, _) => out!("{text}"),
    }
    // Interrupted: the shell's code for the signal (130 for SIGINT, 143 for SIGTERM), whatever the
    // program made of the forwarded signal; else the program's own status.
    let code = match report.interrupted {
        Some(sig) => 128 + sig,
        None => report.exit.shell_code(),
    };
    Ok(ExitCode::from(code.clamp(0, 255) as u8))
}

fn per_syscall(r: &Report) -> Table {
    let mut t = Table::new(["syscall", "delegated", "local"]);
    let mut rows: Vec<_> = r.syscalls.iter().collect();
    rows.sort_by_key(|(_, c)| std::cmp::Reverse(c.delegated + c.local.unwrap_or(0)));
    for (name, c) in rows {
        t.row([
            name.clone(),
            c.delegated.to_string(),
            c.local.map(|l| l.to_string()).unwrap_or_else(|| "-".into()),
        ]);
    }
    t
}

fn table_text(r: &Report, cmp: Option<&compare::Outcome>, out: &Out) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} {} under {} (policy {}, f_c {} each way), compute CPUs {}, control CPUs {}",
        out.bold("emulated"),
        r.command.join(" "),
        r.mechanism,
        r.policy,
        r.fc,
        r.compute_cpus,
        r.control_cpus
    );
    if let Some(i) = &r.interception {
        let _ = write!(s, "interception: {i}");
        if let Some(c) = r.rewrite_cache {
            let _ = write!(
                s,
                " (rewrite cache: {} mappings patched from it, {} classified and stored)",
                c.hits, c.stored
            );
        }
        if let Some(n) = r.red_zone_sites.filter(|&n| n > 0) {
            let how = if i.contains("SUD off") {
                "run natively, neither counted nor delegated"
            } else {
                "served through SIGSYS"
            };
            let _ = write!(
                s,
                "; {n} `syscall` sites in functions that keep data under the stack pointer left as they are (calls there {how})"
            );
        }
        let _ = writeln!(s);
    }
    let local = r
        .local_total
        .map(|l| l.to_string())
        .unwrap_or_else(|| "not observed by this mechanism".into());
    let _ = writeln!(s, "wall time {}, {}", format_secs(r.wall_secs), r.exit);
    if let Some(sig) = r.interrupted {
        let _ = writeln!(
            s,
            "{}: interrupted by {} (forwarded to the program, which was waited for)",
            out.bold("PARTIAL"),
            multios_emulate::signal_name(sig)
        );
    }
    let _ = writeln!(s, "delegated calls {}, local calls {local}", r.delegated_total);
    if let Some(d) = &r.delivered_fc {
        let _ = writeln!(
            s,
            "delivered f_c (one way, {} spins): min {} / median {} / p99 {}",
            d.n,
            format_secs(d.min),
            format_secs(d.median),
            format_secs(d.p99)
        );
    }
    if !r.forced_local.is_empty() {
        let _ = writeln!(s, "kept local by the mechanism: {}", r.forced_local.join(", "));
    }
    if let Some(o) = cmp {
        let c = &o.comparison;
        let _ = writeln!(
            s,
            "{} pair(s), ABBA; median native {} → measured speedup {:.4} (median of the paired ratios{}); predicted: naïve {:.4}, refined {:.4} ({}){}",
            o.pairs.len(),
            format_secs(c.native_secs),
            c.measured_speedup,
            o.speedup_ci
                .map(|(lo, hi)| format!(
                    ", {:.1} % interval [{lo:.4}, {hi:.4}]",
                    100.0 * o.ci_coverage.unwrap_or(0.0)
                ))
                .unwrap_or_default(),
            c.naive_speedup,
            c.refined_speedup,
            format_secs(c.refined_secs),
            c.excess_per_call_secs
                .map(|e| format!("; mechanism excess {} per delegated call", format_secs(e)))
                .unwrap_or_default()
        );
        let _ = writeln!(s, "verdict: {}", o.verdict.text);
        for (i, p) in o.pairs.iter().enumerate() {
            let _ = writeln!(
                s,
                "  pair {} ({}): native {} ({}), emulated {} ({}), speedup {:.4}",
                i + 1,
                p.order,
                format_secs(p.native_secs),
                p.native_exit,
                format_secs(p.emulated_secs),
                p.emulated_exit,
                p.speedup
            );
        }
        match o.stdin.bytes {
            Some(b) => {
                let _ = writeln!(s, "stdin: {b} bytes captured, replayed to every run");
            }
            None => {
                let _ = writeln!(s, "stdin: a terminal, not captured: every run read /dev/null");
            }
        }
        if o.output_differences.is_empty() {
            let _ = writeln!(s, "outputs: every run wrote the same stdout and stderr");
        } else {
            let _ = writeln!(
                s,
                "outputs: {} run stream(s) differ from the first native run's",
                o.output_differences.len()
            );
        }
    }
    s.push_str(&per_syscall(r).render(out));
    s
}
