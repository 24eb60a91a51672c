//! `multios lwk` (issue #5): run an unmodified Linux program on the LWK in KVM, and measure the
//! delegation round trip.

use crate::output::{Format, Out, Table};
use multios_lwk::fc::{self, Mechanism};
use multios_lwk::policy::Overrides;
use multios_lwk::{Backend, Config, Partition};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    which: Which,
}

#[derive(clap::Subcommand, Debug)]
enum Which {
    /// Run PROG on the LWK: guest ring 3 at native speed, system calls served by the VMM or delegated
    Run(RunArgs),
    /// Measure the round trip of LWK-local and delegated system calls (ring vs MMIO exit vs native)
    Fc(FcArgs),
    /// The refined model against the real LWK: the synthetic benchmark (paper §4.1) natively and
    /// in the LWK at several call intensities, model inputs measured apart
    Validate(super::lwk_validate::Args),
    /// Rank a forwarded-event trace (`lwk run --trace FILE`) by total cost, with the function
    /// behind each call (Multiverse's hot spots)
    Hotspots(super::lwk_hotspots::Args),
    /// Write one executable that runs PROG in the LWK when started as an ordinary program
    /// (Multiverse's fat binary), with its overrides and settings embedded
    Pack(super::lwk_pack::Args),
    /// CPython's regression tests and stress-ng natively and in the LWK, side by side; every
    /// difference is explained by a documented limit or reported as unexplained (exit 1)
    Conformance(super::lwk_conformance::Args),
    /// What starting an image costs the LWK more than natively, by its loaded and executable
    /// bytes and its libraries' text (the `validate --terms images` microbenchmark)
    Images(super::lwk_images::Args),
}

#[derive(clap::Args, Debug)]
struct RunArgs {
    /// Write the run's profile (local vs delegated counts and times) to FILE
    #[arg(long, value_name = "FILE")]
    profile: Option<PathBuf>,
    /// Which calls are delegated, in `emulate --policy`'s language: all, none, mckernel, mos,
    /// mktrace, list:FILE, least:F, most:F, random:F[:SEED] (the last three need --policy-profile).
    /// The LWK still serves the calls it must and delegates those it cannot serve (a note says
    /// which). Default: mckernel
    #[arg(long, conflicts_with = "local")]
    policy: Option<String>,
    /// The profile a fraction policy (least:/most:/random:) ranks the calls of (`emulate` calls it
    /// --profile; here --profile is the profile this run writes)
    #[arg(long, value_name = "FILE", requires = "policy")]
    policy_profile: Option<PathBuf>,
    /// The inverse form of --policy: a file naming the calls to serve locally, one a line; every
    /// other call is delegated (default: McKernel's local set)
    #[arg(long, value_name = "FILE")]
    local: Option<PathBuf>,
    /// Guest memory for the application, in MiB (multiple of 2, at most 65532)
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u64).range(2..=65532))]
    mem_mib: u64,
    /// How calls reach the VMM: ring (proxy thread, doorbell fallback) or exit (MMIO exit per
    /// call). Default: ring, or exit when the proxy would share a CPU with the LWK
    #[arg(long, value_parser = ["ring", "exit"])]
    backend: Option<String>,
    /// Do not rewrite the `mov $nr,%eax; syscall` sites of the program and its libraries (by
    /// default they jump to the LWK's stub instead of paying this KVM's ≈ 3 µs syscall trap;
    /// see docs/LWK.md)
    #[arg(long)]
    no_rewrite_syscalls: bool,
    /// Accepted for compatibility: rewriting is the default
    #[arg(long, hide = true, conflicts_with = "no_rewrite_syscalls")]
    rewrite_syscalls: bool,
    /// Microseconds the proxy keeps polling after a call before it parks (later calls take the
    /// doorbell exit, ≈ 20 µs; a polling proxy slows a computing guest on its sibling CPU)
    #[arg(long, default_value_t = 1000)]
    proxy_idle_us: u64,
    /// Microseconds between the idle proxy's exits to the hypervisor, 0 for none (on a VM an IPI
    /// for a busy CPU waits for its next exit; the guest's TLB flushes waited ms for a polling
    /// proxy). Default: MULTIOS_HV_EXIT_US, else 20
    #[arg(long, value_name = "US")]
    proxy_hv_exit_us: Option<u64>,
    /// The LWK partition: CPUs for the guest's threads (vCPU k runs on the k-th, round robin;
    /// the guest's sched_getaffinity reports them all, so OpenMP starts one thread per CPU).
    /// Default: every available CPU but Linux's (the proxy's): the one that takes the most device
    /// interrupts, the first on a tie
    #[arg(long, value_name = "LIST")]
    cpus: Option<String>,
    /// The Linux CPU the proxy thread runs on (default: the available CPU that takes the most
    /// device interrupts, the first on a tie; with --cpus, the first CPU not listed)
    #[arg(long, value_name = "CPU")]
    proxy_cpu: Option<usize>,
    /// Write every system call that left the guest (delegated to Linux, or served by the LWK:
    /// memory, threads, signals…) and every fault turned into a signal to FILE (JSON Lines: time,
    /// vCPU, call, duration, result, the caller and frames found on the stack); a forked child
    /// writes FILE.PID. Rank it with `multios lwk hotspots FILE`
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Bind library functions of the program to LWK implementations (YAML: `overrides:` a list of
    /// `function:`/`with:`; `multios lwk hotspots --write-overrides` writes one). Dynamically
    /// linked programs; see docs/LWK.md
    #[arg(long, value_name = "FILE")]
    overrides: Option<PathBuf>,
    /// Back anonymous writable mappings with host pages when the program makes them, instead of
    /// one fault per first touch (Multiverse's prefault; costs memory for pages never touched)
    #[arg(long)]
    prefault: bool,
    /// Ask for transparent huge pages behind the guest's memory (off by default: on a VM whose
    /// host reclaims free memory, as this one, a fresh 2 MiB page costs the guest up to 5 ms to
    /// fault in; see docs/LWK.md)
    #[arg(long)]
    huge_pages: bool,
    /// Make the host pages behind new anonymous memory (mmap, brk growth) on the proxy's CPU
    /// before the program touches them, instead of one KVM fault per first-touched page: `ahead`
    /// (at most 64 MiB of each range), a number of MiB per range, or `off`. Default: the
    /// environment's MULTIOS_LWK_POPULATE, else off (see docs/LWK.md)
    #[arg(long, value_name = "ahead|MIB|off")]
    populate: Option<String>,
    /// Make the host pages behind the first KIB of each new anonymous range (mmap, brk growth) in
    /// the call that maps it, so that the program's first touches find them (not MAP_NORESERVE,
    /// MAP_STACK or MAP_GROWSDOWN mappings; at most 256 ranges' worth in a run), or `off`.
    /// Default: the environment's MULTIOS_LWK_POPULATE_SYNC, else 4096 (see docs/LWK.md)
    #[arg(long, value_name = "KIB|off")]
    populate_at_map: Option<String>,
    /// While the proxy idles between calls, make the host pages of the free memory where the
    /// next anonymous mappings will land (the LWK's mmap is deterministic; the forecast repeats
    /// the recurring sizes of the last mappings), KIB of them at a time, so that the mapping call
    /// finds them made: `on` (4096), a number of KiB, or `off`. Pages no mapping gets are given
    /// back. Default: the environment's MULTIOS_LWK_POPULATE_NEXT, else off (see docs/LWK.md)
    #[arg(long, value_name = "on|KIB|off")]
    populate_next: Option<String>,
    /// Reserve the LWK's CPUs and memory for the run (IHK's reserve cpu/mem): an isolated cpuset
    /// partition (no other task there, no load balancing; cgroup v2, or cgroup v1 where cpuset is
    /// bound to it) and the --mem-mib window locked and pre-faulted; given back at the end. Root
    #[arg(long)]
    reserve: bool,
    /// Programs that an execve in the guest runs on Linux, outside the LWK, as a Linux process
    /// with the guest's pid and open files (names looked up in PATH and Open MPI's directories when
    /// the run starts, or absolute paths, comma-separated; trusted by file identity, not name).
    /// Default: none. `orted,prted` keeps an MPI singleton's daemon on Linux as under mpirun; it
    /// then runs natively on the guest's environment and MCA settings, so only for trusted guests
    #[arg(long, value_name = "LIST")]
    linux_exec: Option<String>,
    /// argv[0] of the program (default: PROG as given); packed executables pass the packed
    /// program's name
    #[arg(long, hide = true, value_name = "NAME")]
    argv0: Option<std::ffi::OsString>,
    /// Print a summary of the run on stderr
    #[arg(long, short)]
    verbose: bool,
    /// Write that summary (JSON, with the start-up phases and KVM's counters: see `costs`) to FILE
    #[arg(long, value_name = "FILE")]
    summary: Option<PathBuf>,
    /// The program and its arguments
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "PROG ARGS"
    )]
    command: Vec<std::ffi::OsString>,
}

#[derive(clap::Args, Debug)]
struct FcArgs {
    /// System calls timed per mechanism
    #[arg(long, default_value_t = 50_000)]
    calls: u32,
    /// Do not pin the vCPU and the proxy to CPUs 1 and 0
    #[arg(long)]
    no_pin: bool,
}

pub fn run(args: Args, out: &Out) -> super::Exit {
    match args.which {
        Which::Run(a) => run_program(a, out),
        Which::Fc(a) => run_fc(a, out),
        Which::Validate(a) => super::lwk_validate::run(a, out),
        Which::Hotspots(a) => super::lwk_hotspots::run(a, out),
        Which::Pack(a) => super::lwk_pack::run(a, out),
        Which::Conformance(a) => super::lwk_conformance::run(a, out),
        Which::Images(a) => super::lwk_images::run(a, out),
    }
}

fn run_program(mut a: RunArgs, out: &Out) -> super::Exit {
    multios_lwk::check_kvm()?;
    // The files written after the run are named from the working directory at the start: the
    // guest's chdir is this process's (issue #16: `cd /tmp` in the guest moved them there).
    for (flag, path) in [("--profile", &mut a.profile), ("--summary", &mut a.summary)] {
        if let Some(p) = path {
            *p = std::path::absolute(&*p).map_err(|e| anyhow::anyhow!("{flag} {}: {e}", p.display()))?;
        }
    }
    let prog = a.command.first().ok_or_else(|| anyhow::anyhow!("missing PROG"))?;
    let prog = prog.to_str().ok_or_else(|| {
        anyhow::anyhow!("PROG {prog:?}: give the program's path in UTF-8 (its arguments may be any bytes)")
    })?;
    let mut cfg = Config::new(prog, &[]);
    // The arguments as given, any bytes (a non-UTF-8 argument was refused: Linux passes them on).
    cfg.argv = a.command.clone();
    cfg.mem_size = a.mem_mib << 20;
    cfg.rewrite_syscalls = a.rewrite_syscalls || !a.no_rewrite_syscalls;
    cfg.proxy_idle_spin = std::time::Duration::from_micros(a.proxy_idle_us);
    if let Some(us) = a.proxy_hv_exit_us {
        cfg.proxy_hv_exit = (us > 0).then(|| std::time::Duration::from_micros(us));
    }
    cfg.trace = a.trace.clone();
    cfg.prefault = a.prefault;
    cfg.huge_pages |= a.huge_pages;
    if let Some(p) = &a.populate {
        cfg.populate_cap = multios_lwk::populate::parse_cap(p).ok_or_else(|| {
            anyhow::anyhow!("--populate {p}: expected `ahead`, `off` or a number of MiB per range")
        })?;
    }
    if let Some(p) = &a.populate_at_map {
        cfg.populate_at_map = multios_lwk::atmap::parse_kib(p).ok_or_else(|| {
            anyhow::anyhow!("--populate-at-map {p}: expected `off` or a number of KiB per range")
        })?;
    }
    if let Some(p) = &a.populate_next {
        cfg.populate_next = multios_lwk::next::parse_ahead(p).ok_or_else(|| {
            anyhow::anyhow!(
                "--populate-next {p}: expected `on`, `off` or a number of KiB kept populated ahead"
            )
        })?;
    }
    cfg.count_resident = a.verbose || out.format == Format::Json || a.summary.is_some();
    cfg.reserve = a.reserve;
    if let Some(list) = &a.linux_exec {
        cfg.linux_exec = linux_exec_list(list);
    }
    if let (Some(name), Some(first)) = (&a.argv0, cfg.argv.first_mut()) {
        *first = name.clone();
    }
    if let Some(f) = &a.overrides {
        cfg.overrides = Some(multios_lwk::overrides::Overrides::load(f)?);
    }
    let shared = set_partition(&mut cfg, a.cpus.as_deref(), a.proxy_cpu)?;
    cfg.backend = match (a.backend.as_deref(), shared) {
        (Some("exit"), _) => Backend::Exit,
        (Some(_), _) => cfg.backend,
        (None, Some(cpu)) => {
            eprintln!(
                "multios lwk: the proxy would share CPU {cpu} with the LWK: using the exit backend (every call \
                 exits to the vCPU's thread; no proxy polling on the guest's CPU). Give the proxy a CPU of its \
                 own (e.g. mpirun --bind-to none, or --map-by core:PE=2), or pass --backend ring"
            );
            Backend::Exit
        }
        (None, None) => cfg.backend,
    };
    if let Some(f) = &a.local {
        let local = multios_lwk::local::from_file(f)?;
        if !local.ignored.is_empty() {
            eprintln!(
                "multios lwk: --local {}: the LWK has no local implementation of {}; they stay delegated",
                f.display(),
                local.ignored.join(", ")
            );
        }
        cfg.policy = local.set;
    }
    if let Some(text) = &a.policy {
        cfg.policy = multios_lwk::local::from_policy(text, a.policy_profile.as_deref())?;
        note_overrides(text, cfg.policy.overrides());
    }
    // Before the program runs, not after: a run must not be lost to a bad path (--summary was
    // checked only after it, and its error replaced the program's exit status).
    if let Some(path) = &a.profile {
        check_writable("--profile", path)?;
    }
    if let Some(path) = &a.summary {
        check_writable("--summary", path)?;
    }
    let o = match multios_lwk::run(&cfg) {
        Ok(o) => o,
        // A program that cannot be found or run exits as a shell's (or env's, timeout's): 127
        // or 126, with the message naming it.
        Err(multios_lwk::LwkError::Load(e)) => {
            eprintln!("multios lwk: {e}");
            return Ok(ExitCode::from(e.exit_code() as u8));
        }
        Err(e) => return Err(anyhow::anyhow!("multios lwk: {e}")),
    };
    if let Some(path) = &a.profile {
        // A run that a signal ended (Ctrl-C, kill) still gets its profile, marked partial.
        let command = a
            .command
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        let p = o.profile(command, cfg.policy.label());
        multios_profile::save(&p, path)?;
    }
    if a.verbose || out.format == Format::Json || a.summary.is_some() {
        let summary = serde_json::json!({
            "status": format!("{:?}", o.status),
            "wall_s": o.wall.as_secs_f64(),
            "startup_s": o.startup.as_secs_f64(),
            "syscalls": o.stats.calls(),
            "trapped_calls": o.stats.trapped(),
            "trapped_share": multios_lwk::outcome::trap_share(o.stats.trapped(), o.stats.calls()),
            "trapped_most": o.stats.top_trapped(10).into_iter()
                .map(|(name, t, n)| serde_json::json!({"call": name, "trapped": t, "calls": n}))
                .collect::<Vec<_>>(),
            "local_calls": o.stats.local_and_delegated().0,
            "delegated_calls": o.stats.local_and_delegated().1,
            "calls": o.stats.counts(),
            "doorbell_exits": o.doorbells,
            "rewritten_sites": o.rewritten,
            "costs": o.costs,
            "refused": o.notes,
            "policy": {
                "label": cfg.policy.label(),
                "overrides": cfg.policy.overrides(),
            },
        });
        if let Some(path) = &a.summary {
            std::fs::write(path, serde_json::to_string_pretty(&summary)?)
                .map_err(|e| anyhow::anyhow!("--summary {}: {e}", path.display()))?;
        }
        // stdout is the program's: the summary goes on stderr, or into the `--results` file.
        if out.format == Format::Json && crate::stdout::to_file() {
            outln!("{}", serde_json::to_string_pretty(&summary)?);
        } else if a.verbose || out.format == Format::Json {
            eprintln!("{}", serde_json::to_string_pretty(&summary)?);
        }
    }
    // Dying of the guest's signal skips main's end: the `--results` file is put in place now.
    if matches!(o.status, multios_lwk::ExitStatus::Signal(_)) {
        crate::stdout::finish(true).map_err(anyhow::Error::msg)?;
    }
    o.die_if_signaled();
    Ok(ExitCode::from(o.code().clamp(0, 255) as u8))
}

/// Says once on stderr where the LWK overrode the policy (the full lists are in `--json`).
fn note_overrides(text: &str, o: &Overrides) {
    let list = |v: &[&str]| match v.len() {
        0..=12 => v.join(", "),
        n => format!("{}, … and {} more (--json lists them)", v[..8].join(", "), n - 8),
    };
    if !o.kept_local.is_empty() {
        eprintln!(
            "multios lwk: note: --policy {text} delegates {}, which the LWK must serve itself: they stay local",
            list(&o.kept_local)
        );
    }
    if !o.delegated.is_empty() {
        eprintln!(
            "multios lwk: note: --policy {text} keeps local {}, which the LWK cannot serve: they are delegated",
            list(&o.delegated)
        );
    }
}

/// Fails with a message naming `path` when the profile could not be written there.
fn check_writable(flag: &str, path: &std::path::Path) -> anyhow::Result<()> {
    multios_host::output::check_writable(path).map_err(|e| anyhow::anyhow!("{flag} {e}"))
}

/// Applies `--cpus` and `--proxy-cpu` (see [`multios_lwk::Partition`]), saying on stderr when the
/// proxy shares a CPU with a vCPU. Returns the proxy's CPU when it is the LWK's only CPU too (the
/// caller then prefers the exit backend).
fn set_partition(
    cfg: &mut Config,
    cpus: Option<&str>,
    proxy: Option<usize>,
) -> anyhow::Result<Option<usize>> {
    let p = Partition::choose(&multios_lwk::available_cpus(), cpus, proxy)?;
    if let Some(cpu) = p.doubled {
        eprintln!(
            "multios lwk: note: CPU {cpu} serves both the proxy and vCPU {} (--cpus {}); threads placed there \
             compete with the proxy's polling",
            p.cpus.len() - 1,
            multios_host::cpus::format_list(&p.cpus)
        );
    }
    p.apply(cfg);
    Ok(p.shared)
}

fn run_fc(a: FcArgs, out: &Out) -> super::Exit {
    multios_lwk::check_kvm()?;
    if a.calls == 0 {
        anyhow::bail!("--calls must be at least 1");
    }
    let mut t = Table::new(["mechanism", "calls", "min_ns", "median_ns", "p99_ns", "mean_ns"]);
    let mut rows = Vec::new();
    for m in Mechanism::ALL {
        // The MMIO exit costs ~30-50 µs: fewer calls keep the run short.
        let n = if m == Mechanism::ExitDelegated {
            a.calls.min(2000)
        } else {
            a.calls
        };
        let s = fc::measure(m, n, !a.no_pin).map_err(|e| anyhow::anyhow!("multios lwk fc: {e}"))?;
        t.row([
            m.name().to_string(),
            s.calls.to_string(),
            format!("{:.0}", s.min_ns),
            format!("{:.0}", s.median_ns),
            format!("{:.0}", s.p99_ns),
            format!("{:.0}", s.mean_ns),
        ]);
        rows.push((m.name(), s));
    }
    match out.format {
        Format::Json => out.json(
            &rows
                .iter()
                .map(|(n, s)| serde_json::json!({"mechanism": n, "summary": s}))
                .collect::<Vec<_>>(),
        )?,
        Format::Csv => out!("{}", t.to_csv()),
        Format::Table => {
            out!("{}", t.render(out));
            outln!("(McKernel's offload round trip for comparison: 6.28 µs; target here ≤ 2 µs median via the ring)");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `--linux-exec LIST`: the programs named (empty names dropped), none for `none`.
fn linux_exec_list(list: &str) -> Vec<String> {
    if list.trim() == "none" {
        return Vec::new();
    }
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}
