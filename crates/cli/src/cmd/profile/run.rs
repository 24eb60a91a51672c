//! `multios profile [--backend ebpf|ptrace|inproc] [-o FILE] [-p PID] -- CMD…` (issue #3): trace a command's
//! system calls, write the profile and print a table sorted by g(s).

use crate::output::{Format, Out};
use multios_profile::Profile;
use multios_profiler::{Backend, Options};
use std::path::{Path, PathBuf};

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum BackendArg {
    /// BTF tracepoints, in-kernel aggregation (needs root or CAP_BPF+CAP_PERFMON); accuracy high
    Ebpf,
    /// seccomp-assisted ptrace, no privileges needed; accuracy low
    Ptrace,
    /// in-process: the emulator's preload library times each call at its rewritten site (dynamic
    /// programs; tens of ns per call); n(s) and g(s) only, no per-call distribution
    Inproc,
}

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Tracing backend [default: ebpf when root, else ptrace]
    #[arg(long, value_enum)]
    backend: Option<BackendArg>,
    /// Where to write the profile; `%r` becomes the MPI rank (from OMPI_COMM_WORLD_RANK, PMI_RANK,
    /// PMIX_RANK or MPI_LOCALRANKID), `%p` the profiler's pid
    #[arg(short, long, default_value = "multios-profile.json")]
    output: PathBuf,
    /// Attach to this running process (and what it forks from now on) instead of starting CMD
    #[arg(short = 'p', long = "pid", conflicts_with = "command")]
    pid: Option<u32>,
    /// With -p: trace for this long (e.g. 10s), else until the process exits or Ctrl-C
    #[arg(long, requires = "pid")]
    duration: Option<multios_units::Duration>,
    /// Also write the syscall CDF (paper Fig. 6/12) as PNG, SVG and CSV into this directory
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    /// Also write every call (thread, start, duration): Chrome trace JSON (Perfetto,
    /// chrome://tracing, speedscope), or one row per call as CSV if FILE ends in .csv, Parquet if
    /// in .parquet (repeat the flag for several files of one run); records with the ptrace
    /// backend (the default with --trace)
    #[arg(long, value_name = "FILE", conflicts_with = "pid")]
    trace: Vec<PathBuf>,
    /// Also record each process of the tree apart (its parent, when it ran, its own n(s), g(s) and
    /// C: `processes[]`, schema 3), for projections that compose the processes (`validate --terms
    /// procs`); eBPF and ptrace; eBPF pays one more hash update per call. With eBPF, also the gaps
    /// between each thread's calls (`syscalls[].gap_hist_log2_ns`, schema 7: `validate --terms
    /// wakeup` prices a delegate's wake-ups from them)
    #[arg(long)]
    per_process: bool,
    /// The command to profile, after `--`, passed to it as given (any bytes)
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "CMD")]
    command: Vec<std::ffi::OsString>,
}

pub fn run(args: RunArgs, out: &Out) -> crate::cmd::Exit {
    if args.command.is_empty() && args.pid.is_none() {
        anyhow::bail!("nothing to profile: give a command after '--' (multios profile -- ls -l) or a process with -p PID");
    }
    if matches!(args.backend, Some(BackendArg::Inproc)) && args.per_process {
        anyhow::bail!("--per-process: the inproc backend does not see processes apart (use ebpf or ptrace)");
    }
    if !args.trace.is_empty() && args.per_process {
        anyhow::bail!(
            "--per-process with --trace: the trace already has every call's process; give one of them"
        );
    }
    if matches!(args.backend, Some(BackendArg::Inproc)) && args.pid.is_some() {
        anyhow::bail!(
            "--backend inproc starts the command itself: it cannot attach to -p PID (use ebpf or ptrace)"
        );
    }
    let opts = Options {
        backend: args.backend.and_then(|b| match b {
            BackendArg::Ebpf => Some(Backend::Ebpf),
            BackendArg::Ptrace => Some(Backend::Ptrace),
            BackendArg::Inproc => None,
        }),
        command: args.command.clone(),
        attach: args.pid,
        duration: args
            .duration
            .map(|d| std::time::Duration::from_secs_f64(d.secs())),
        per_process: args.per_process,
    };
    let rank = multios_profiler::rank_from_env();
    let path = PathBuf::from(multios_profiler::expand_output(
        args.output.as_os_str(),
        rank,
        std::process::id(),
    ));
    multios_profile::check_writable(&path)?;
    for t in &args.trace {
        multios_profile::check_writable(t)?;
    }
    let mut profile = if matches!(args.backend, Some(BackendArg::Inproc)) {
        if !args.trace.is_empty() {
            anyhow::bail!(
                "--trace records each call with the ptrace backend: use --backend ptrace (or no --backend)"
            );
        }
        multios_profiler::inproc::profile(&args.command)?
    } else if !args.trace.is_empty() {
        let (p, records) = multios_profiler::profile_traced(&opts)?;
        for t in &args.trace {
            multios_report::write_trace(t, &records).map_err(|e| anyhow::anyhow!("--trace: {e}"))?;
        }
        p
    } else {
        multios_profiler::profile(&opts)?
    };
    if let Some(r) = rank {
        profile.collection.notes.push(format!("MPI rank {r}"));
        for t in &mut profile.threads {
            t.rank = Some(r);
        }
    }
    multios_profile::save(&profile, &path)?;
    super::print_profile(&profile, out, None)?;
    if let Some(dir) = &args.plot {
        plot_cdf(&profile, dir)?;
    }
    if out.format == Format::Table {
        eprintln!("profile written to {}", path.display());
    }
    // Like time(1): exit as the target did (128 + signal when it was killed).
    let code = match &profile.exit {
        Some(e) => e.code.unwrap_or_else(|| 128 + e.signal.unwrap_or(0)),
        None => 0,
    };
    Ok(std::process::ExitCode::from(code.clamp(0, 255) as u8))
}

/// Fig. 6/12: the fraction of distinct system calls invoked at most x times, log x.
fn plot_cdf(p: &Profile, dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create plot directory {}: {e}", dir.display()))?;
    let w = multios_model::Workload::from_profile(p);
    let name = p.program().unwrap_or_default();
    let fig = multios_plot::Figure::Line(multios_plot::LineChart {
        title: format!("System-call profile of {name}: CDF of invocation counts (Fig. 6)"),
        x_label: "invocations n(s)".into(),
        y_label: "fraction of distinct syscalls invoked ≤ n times".into(),
        x_log: true,
        y_log: false,
        series: vec![multios_plot::Series::line(
            name,
            multios_model::sweep::syscall_cdf(&w),
        )],
    });
    let written = multios_plot::write(&fig, &dir.join("syscall-cdf"))?;
    eprintln!(
        "plot written: {} {} {}",
        written.png.display(),
        written.svg.display(),
        written.csv.display()
    );
    Ok(())
}
