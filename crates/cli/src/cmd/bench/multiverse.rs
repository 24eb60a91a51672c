//! `multios bench multiverse` (issue #13): Multiverse's Fig. 9–12 on Racket, natively, in the LWK
//! and in the LWK with overrides, the projection of the overhead, threads, CPython, the trace's
//! cost and the hot-spot loop; the benchmark is multios_experiment::bench::multiverse.

use crate::output::{Format, Out, Table};
use multios_experiment::bench::multiverse::{self, Config};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Measured passes per benchmark: each runs every variant once, forward then reversed in the
    /// next (ABBA); at least 6 for a 95 % interval of the paired ratios (default: as many as fill
    /// --budget-s, 12 to 40)
    #[arg(long)]
    runs: Option<usize>,
    /// Seconds of measured passes per benchmark when --runs is not given (short benchmarks get
    /// more passes)
    #[arg(long, default_value_t = 24.0, value_name = "S")]
    budget_s: f64,
    /// Do not run every variant once, discarded, before a benchmark's measured passes
    #[arg(long)]
    no_warmup: bool,
    /// Small problem sizes (seconds instead of minutes; for tests)
    #[arg(long)]
    quick: bool,
    /// A benchmark's argument instead of its default size, e.g. `--arg spectral-norm=2000`
    /// (repeatable)
    #[arg(long = "arg", value_name = "NAME=N", value_parser = parse_arg)]
    args: Vec<(String, u32)>,
    /// Only these benchmarks (binary-trees, fannkuch-redux, fasta, fasta-3, mandelbrot, n-body,
    /// spectral-norm)
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// The Racket interpreter
    #[arg(long, default_value = "/usr/bin/racket")]
    racket: std::path::PathBuf,
    /// The Python of the second runtime (CPython's threads with pthread_create overridden)
    #[arg(long, default_value = "/usr/bin/python3.11")]
    python: std::path::PathBuf,
    /// Do not run the CPython part
    #[arg(long)]
    no_python: bool,
    /// The overrides of the "LWK + overrides" variant (default: clock_gettime, gettimeofday, time)
    #[arg(long, value_name = "FILE")]
    overrides: Option<std::path::PathBuf>,
    /// Do not also run the native program pinned to the vCPU's CPU, alone and beside a spinner on
    /// the proxy's CPU (the "where the time goes" table)
    #[arg(long)]
    no_causes: bool,
    /// The LWK's --proxy-idle-us: how long its proxy polls after a call before it parks (default:
    /// lwk run's)
    #[arg(long, value_name = "US")]
    proxy_idle_us: Option<u64>,
    /// The projection's terms besides the events: `wake` (doorbells that woke the parked proxy ×
    /// a burst's extra cost), `sibling` (the proxy's CPU time × (1 − γ)), `wait` (the vCPU's
    /// measured extra wait for its CPU), comma-separated; `all`, or `events` for none
    #[arg(long, default_value = "all", value_parser = parse_terms)]
    terms: multiverse::Terms,
    /// Also run the LWK with these extra `lwk run` flags in every pass, paired against the plain
    /// LWK (e.g. `--alt='--populate ahead'`; the flags are split at spaces)
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
    alt: Option<String>,
}

fn parse_arg(s: &str) -> Result<(String, u32), String> {
    let (name, n) = s
        .split_once('=')
        .ok_or_else(|| format!("--arg {s}: expected NAME=N, e.g. spectral-norm=2000"))?;
    let n = n
        .trim()
        .parse::<u32>()
        .map_err(|e| format!("--arg {s}: `{n}` is not a whole number ({e})"))?;
    Ok((name.trim().to_string(), n))
}

fn parse_terms(s: &str) -> Result<multiverse::Terms, String> {
    multiverse::Terms::parse(s)
}

fn ci(c: Option<(f64, f64)>) -> String {
    c.map_or_else(|| "-".into(), |(lo, hi)| format!("[{lo:.3}, {hi:.3}]"))
}

pub fn run(a: Args, out: &Out) -> crate::cmd::Exit {
    let cfg = Config {
        runs: a.runs,
        budget_s: a.budget_s,
        warmup: !a.no_warmup,
        quick: a.quick,
        args: a.args,
        only: a.only,
        multios: std::env::current_exe()?,
        racket: a.racket,
        python: (!a.no_python).then_some(a.python),
        overrides: a.overrides,
        causes: !a.no_causes,
        proxy_idle_us: a.proxy_idle_us,
        terms: a.terms,
        alt: a
            .alt
            .as_deref()
            .unwrap_or("")
            .split_whitespace()
            .map(std::ffi::OsString::from)
            .collect(),
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
        "projected_events_s",
    ]);
    // The overrides variant beside the plain LWK: each pair is "LWK / LWK + overrides".
    let mut ovr = Table::new([
        "benchmark",
        "lwk_s",
        "lwk_overrides_s",
        "overrides/lwk",
        "interval",
        "forwarded",
        "doorbells",
        "proxy_wakes",
        "vcpu_run_s",
        "proxy_parked_s",
        "outside_run_s",
    ]);
    let mut causes = Table::new([
        "benchmark",
        "native_s",
        "native_pinned_s",
        "pinned/native",
        "beside_spinner_s",
        "beside/pinned",
        "interval",
        "lwk/pinned",
        "interval",
        "vcpu_run_s",
        "vcpu_wait_s",
        "native_off_cpu_s",
        "proxy_run_s",
        "proxy_wait_s",
        "proxy_parked_s",
        "gamma_used",
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
            out.num(row.projected_events_s, 4),
        ]);
        let (c, o) = (&row.counts, &row.counts_overrides);
        let pair = |a: f64, b: f64, d: usize| format!("{} / {}", out.num(a, d), out.num(b, d));
        ovr.row([
            row.name.clone(),
            out.num(row.lwk.wall_s, 3),
            out.num(row.lwk_overrides.wall_s, 3),
            out.num(row.overrides_vs_lwk, 3),
            ci(row.overrides_vs_lwk_ci),
            pair(c.delegated_calls, o.delegated_calls, 0),
            pair(c.doorbells, o.doorbells, 0),
            pair(c.proxy_wakes, o.proxy_wakes, 0),
            pair(c.vcpu_run_s, o.vcpu_run_s, 3),
            pair(c.proxy_parked_s, o.proxy_parked_s, 3),
            pair(
                row.lwk.wall_s - c.run_wall_s,
                row.lwk_overrides.wall_s - o.run_wall_s,
                3,
            ),
        ]);
        let (np, pr, bs, br, bci, lr, lci) = match &row.causes {
            Some(k) => (
                out.num(k.pinned.wall_s, 3),
                out.num(k.pinned_ratio, 3),
                out.num(k.beside.wall_s, 3),
                out.num(k.beside_ratio, 3),
                ci(k.beside_ci),
                out.num(k.lwk_pinned_ratio, 3),
                ci(k.lwk_pinned_ci),
            ),
            None => Default::default(),
        };
        causes.row([
            row.name.clone(),
            out.num(row.native.wall_s, 3),
            np,
            pr,
            bs,
            br,
            bci,
            lr,
            lci,
            out.num(c.vcpu_run_s, 3),
            out.num(c.vcpu_wait_s, 3),
            out.num(c.native_off_cpu_s, 3),
            out.num(c.proxy_run_s, 3),
            out.num(c.proxy_wait_s, 3),
            out.num(c.proxy_parked_s, 3),
            out.num(row.gamma, 3),
        ]);
    }
    // The paper's model beside the measured overhead, both paired, and the fixed per-run cost.
    let mut paper = Table::new([
        "benchmark",
        "passes",
        "fixed_ms",
        "interval",
        "fixed/native",
        "forwarded",
        "cycles_each",
        "paper_ms",
        "paper+fixed_ms",
        "refined_ms",
        "measured_ms",
        "interval",
    ]);
    let ms_ci = |c: Option<(f64, f64)>| {
        c.map_or_else(
            || "-".into(),
            |(lo, hi)| format!("[{}, {}]", out.num(lo * 1e3, 1), out.num(hi * 1e3, 1)),
        )
    };
    // The image's fixed cost: the program at its trivial size, paired in the same passes.
    let mut image = Table::new([
        "benchmark",
        "tiny_arg",
        "tiny_native_s",
        "tiny_lwk_s",
        "tiny_overhead_ms",
        "interval",
        "its_events_ms",
        "image_fixed_ms",
        "true_fixed_ms",
        "tiny_vcpu_run_s",
        "tiny_startup_ms",
        "tiny_outside_run_ms",
    ]);
    // `--alt`: the LWK with other flags against the plain LWK.
    let mut alt = Table::new([
        "benchmark",
        "flags",
        "lwk_s",
        "alt_s",
        "alt/lwk",
        "interval",
        "faster",
        "kvm_faults",
        "vcpu_host_faults",
        "populated",
        "vcpu_run_s",
        "proxy_run_s",
    ]);
    // The passes by cross-CPU level.
    let mut levels = Table::new([
        "benchmark",
        "level_ns",
        "passes",
        "lwk/native",
        "interval",
        "native_s",
        "lwk_s",
        "native_cpu_s",
        "lwk_vcpu_run_s",
        "lwk_proxy_run_s",
        "repeated",
    ]);
    let mut verdicts = Table::new(["benchmark", "target", "value", "interval", "verdict"]);
    let mut outliers = Table::new(["benchmark", "variant", "pass", "wall_s", "over_median"]);
    for row in &r.rows {
        let pm = &row.paper;
        paper.row([
            row.name.clone(),
            row.passes.to_string(),
            out.num(pm.fixed_s * 1e3, 1),
            ms_ci(pm.fixed_ci),
            format!("{} %", out.num(row.fixed_share * 100.0, 1)),
            out.num(pm.forwarded, 0),
            out.num(pm.each_cycles, 0),
            out.num(pm.forwarding_s * 1e3, 1),
            out.num(pm.total_s * 1e3, 1),
            out.num(row.projection.total_s * 1e3, 1),
            out.num(row.overhead_paired_s * 1e3, 1),
            ms_ci(row.overhead_ci),
        ]);
        if let Some(a) = &row.alt {
            let (c, k) = (&row.counts, &a.counts);
            let pair = |x: f64, y: f64, d: usize| format!("{} / {}", out.num(x, d), out.num(y, d));
            alt.row([
                row.name.clone(),
                a.flags.join(" "),
                out.num(a.lwk.wall_s, 3),
                out.num(a.alt.wall_s, 3),
                out.num(a.ratio, 3),
                ci(a.ci),
                match a.faster {
                    multiverse::Decision::Met => "yes",
                    multiverse::Decision::NotMet => "no (slower)",
                    multiverse::Decision::Undecided => "undecided",
                }
                .to_string(),
                pair(c.shadow_faults, k.shadow_faults, 0),
                pair(c.vcpu_faults, k.vcpu_faults, 0),
                pair(c.populated, k.populated, 0),
                pair(c.vcpu_run_s, k.vcpu_run_s, 3),
                pair(c.proxy_run_s, k.proxy_run_s, 3),
            ]);
        }
        for l in &row.by_level {
            levels.row([
                row.name.clone(),
                out.num(l.level_ns, 0),
                l.passes.to_string(),
                out.num(l.lwk_ratio, 3),
                ci(l.lwk_ci),
                out.num(l.native_s, 3),
                out.num(l.lwk_s, 3),
                out.num(l.native_cpu_s, 3),
                out.num(l.lwk_vcpu_run_s, 3),
                out.num(l.lwk_proxy_run_s, 3),
                row.repeated.to_string(),
            ]);
        }
        let im = &row.image;
        image.row([
            row.name.clone(),
            im.arg.to_string(),
            out.num(im.native_s, 3),
            out.num(im.lwk_s, 3),
            out.num(im.overhead_s * 1e3, 1),
            ms_ci(im.overhead_ci),
            out.num(im.events_s * 1e3, 1),
            out.num(im.fixed_s * 1e3, 1),
            out.num(pm.fixed_s * 1e3, 1),
            out.num(im.counts.vcpu_run_s, 3),
            out.num(im.counts.startup_s * 1e3, 1),
            out.num((im.lwk_s - im.counts.run_wall_s) * 1e3, 1),
        ]);
        for v in &row.verdicts {
            let ms = v.key.contains("10 %");
            verdicts.row([
                row.name.clone(),
                v.key.to_string(),
                if ms {
                    out.num(v.value * 1e3, 1)
                } else {
                    out.num(v.value, 3)
                },
                if ms { ms_ci(v.interval) } else { ci(v.interval) },
                v.decision.word().to_string(),
            ]);
        }
        for o in &row.outliers {
            outliers.row([
                row.name.clone(),
                o.variant.clone(),
                o.pass.to_string(),
                out.num(o.wall_s, 3),
                out.num(o.over_median, 2),
            ]);
        }
    }
    let m = &r.micro;
    let mut proj = Table::new(["benchmark", "event", "count", "each_ns", "total_ms", "included"]);
    for row in &r.rows {
        for t in &row.projection.terms {
            proj.row([
                row.name.clone(),
                t.event.to_string(),
                // Terms counted in seconds get decimals; events are whole.
                out.num(t.count, if t.event.contains("(s") { 3 } else { 0 }),
                out.num(t.each_ns, 0),
                out.num(t.total_s * 1e3, 2),
                if t.included { "yes" } else { "no" }.to_string(),
            ]);
        }
    }
    let mut fig12 = Table::new([
        "benchmark",
        "native_s",
        "native+prefault_s",
        "lwk_s",
        "lwk+prefault_s",
        "prefault/lwk",
        "interval",
        "shadow_faults",
        "with_prefault",
        "identical",
    ]);
    for f in &r.prefault {
        fig12.row([
            f.name.clone(),
            out.num(f.native_s, 3),
            out.num(f.native_prefault_s, 3),
            out.num(f.lwk_s, 3),
            out.num(f.lwk_prefault_s, 3),
            out.num(f.lwk_ratio, 3),
            ci(f.lwk_ci),
            out.num(f.shadow_faults, 0),
            out.num(f.shadow_faults_prefault, 0),
            if f.identical_output { "yes" } else { "NO" }.to_string(),
        ]);
    }
    match out.format {
        Format::Json => out.json(&r)?,
        Format::Csv => out!(
            "{}{}{}{}{}{}{}{}{}{}{}{}",
            fig9.to_csv(),
            fig10.to_csv(),
            paper.to_csv(),
            image.to_csv(),
            alt.to_csv(),
            levels.to_csv(),
            verdicts.to_csv(),
            outliers.to_csv(),
            ovr.to_csv(),
            causes.to_csv(),
            proj.to_csv(),
            fig12.to_csv()
        ),
        Format::Table => {
            outln!(
                "{}",
                out.bold(&format!(
                    "{} ({}; each benchmark's variants once as a warm-up{}, then in passes alternately forward and \
                     reversed; {:.0} s in all)",
                    r.racket,
                    match cfg.runs {
                        Some(n) => format!("{n} passes"),
                        None => format!("passes filling {:.0} s per benchmark, 12 to 40", cfg.budget_s),
                    },
                    if cfg.warmup { ", discarded" } else { " (off)" },
                    r.elapsed_s
                ))
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
                out.bold(&format!(
                    "Fig. 10: wall time native / LWK / LWK + overrides ({}) (median of the paired ratios, 95 % interval)",
                    r.overrides.join(", ")
                ))
            );
            out!("{}", fig10.render(out));
            outln!(
                "measured: LWK − native median wall; projected: the sum of the included terms below, each count from \
                 the run times a cost from a microbenchmark (events: the event terms alone)"
            );
            outln!();
            outln!(
                "{}",
                out.bold(
                    "Multiverse's model beside the measured overhead (paired: median of LWK − native per pass, 95 % interval)"
                )
            );
            out!("{}", paper.render(out));
            outln!(
                "fixed: `lwk run -- {}` − `{}` paired in the same passes (start-up and exit; fixed/native is the \
                 least LWK / native can be at this size); paper: forwarded calls × the cycles one adds (Fig. 11); \
                 refined: every term of the projection table below",
                "/bin/true",
                "/bin/true"
            );
            outln!();
            outln!(
                "{}",
                out.bold(
                    "The fixed cost of each benchmark's image: the same program at a trivial size, natively and in the \
                     LWK, paired in the same passes"
                )
            );
            out!("{}", image.render(out));
            outln!(
                "image_fixed: the trivial run's paired overhead less its own events priced as below (the refined \
                 projection's fixed term; the boot's events are in both runs and counted once); true_fixed: \
                 `lwk run -- /bin/true` − `/bin/true` (the paper's fixed term); outside_run: the LWK process's wall \
                 less the run `lwk run` timed (exec, teardown, exit)"
            );
            if r.rows.iter().any(|x| x.alt.is_some()) {
                outln!();
                outln!(
                    "{}",
                    out.bold(
                        "The LWK with other flags (--alt) against the plain LWK, paired in the same passes"
                    )
                );
                out!("{}", alt.render(out));
                outln!(
                    "faster: yes when the whole interval of alt/lwk is at or below 1, no when it is above; the count \
                     columns are plain / alt (medians)"
                );
            }
            outln!();
            outln!(
                "{}",
                out.bold(
                    "The passes by cross-CPU level (the cache-line round trip between the vCPU's and the proxy's CPUs, \
                     probed before each pass and after each run; a pass that saw two levels is run again)"
                )
            );
            out!("{}", levels.render(out));
            outln!(
                "lwk/native: paired within the level's passes; repeated: passes of the benchmark run again because \
                 their runs saw two levels; every pass's level and counts are in --json (`per_pass`)"
            );
            outln!();
            outln!(
                "{}",
                out.bold(
                    "The overrides against the plain LWK (paired; each pair of columns is LWK / LWK + overrides, medians)"
                )
            );
            out!("{}", ovr.render(out));
            outln!(
                "outside_run_s: the process's wall less the run `lwk run` timed (exec, teardown, exit); \
                 overrides/lwk ≤ 1 is the issue's \"overrides at least as fast as without\""
            );
            outln!();
            outln!(
                "{}",
                out.bold(&format!(
                    "Where the time goes: native pinned to the vCPU's CPU {}, alone and beside a spinner on the proxy's \
                     CPU {}; the LWK's thread times (scheduler's schedstat, medians)",
                    m.vcpu_cpu, m.proxy_cpu
                ))
            );
            out!("{}", causes.render(out));
            outln!(
                "γ (AAM's beside microbenchmark on the same CPUs, {} phases of {:.0} ms): {:.3}; the busy-sibling term \
                 costs 1 − γ per second the proxy ran, with γ the workload's own (gamma_used: 1 / beside/pinned) \
                 where the causes ran, else this one",
                2 * m.beside.phases,
                m.beside.phase_ms,
                m.costs.gamma
            );
            outln!(
                "a burst of {} calls after the proxy parked: {:.1} µs natively, {:.1} µs in the LWK with {:.1} doorbell \
                 exits; beyond its calls and exits a wake-up costs {:.1} µs (the proxy wake-up term)",
                m.parked_burst,
                m.parked_burst_native_ns * 1e-3,
                m.parked_burst_lwk_ns * 1e-3,
                m.parked_doorbells_per_burst,
                m.costs.wake_ns * 1e-3
            );
            outln!();
            outln!("{}", out.bold("Projection of the LWK's overhead, term by term"));
            out!("{}", proj.render(out));
            if let Some(sn) = r.rows.iter().find(|x| x.name == "spectral-norm") {
                let pm = &sn.paper;
                outln!(
                    "Multiverse's template for spectral-norm (events × 1500 cycles = 112 M cycles, 51 ms): here {:.0} \
                     forwarded × {:.0} cycles = {:.1} M cycles ({:.1} ms); with the fixed per-run cost {:.1} ms: {:.1} ms; \
                     every term: {:.1} ms; measured {:.1} ms {}",
                    pm.forwarded,
                    pm.each_cycles,
                    pm.forwarded * pm.each_cycles * 1e-6,
                    pm.forwarding_s * 1e3,
                    pm.fixed_s * 1e3,
                    pm.total_s * 1e3,
                    sn.projection.total_s * 1e3,
                    sn.overhead_paired_s * 1e3,
                    ms_ci(sn.overhead_ci)
                );
            }
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
            let c = &m.costs;
            outln!(
                "per-event costs: local call {:.0} ns, doorbell exit {:.0} ns, KVM fault {:.0} ns (with its prefetch \
                 {:.0} ns per page), first touch per 4 KiB {:.0} ns in the LWK vs {:.0} ns natively, start-up {:.1} ms, \
                 invalidation {:.0} ns",
                c.local_ns,
                c.doorbell_ns,
                c.kvm_fault_ns,
                c.shadow_fault_ns,
                c.lwk_touch_ns,
                c.native_touch_ns,
                c.startup_ns * 1e-6,
                c.invalidation_ns
            );
            outln!(
                "thread create+join: {:.1} µs natively, {:.1} µs in the LWK, {:.1} µs with the lwk-threads override",
                m.thread_pair_native_ns * 1e-3,
                m.thread_pair_lwk_ns * 1e-3,
                m.thread_pair_override_ns * 1e-3
            );
            outln!(
                "--trace: {:.0} ns per traced event on a {:.0} ns delegated call",
                m.trace_event_ns,
                m.trace_plain_call_ns
            );
            if let Some(t) = &r.trace_run {
                outln!(
                    "--trace on {}: {:.3} s vs {:.3} s ({} {}), {} events, {} bytes",
                    t.program,
                    t.traced_s,
                    t.plain_s,
                    out.num(t.ratio, 3),
                    ci(t.ci),
                    t.events,
                    t.bytes
                );
            }
            outln!();
            outln!(
                "{}",
                out.bold("Fig. 12: the mmap prefault override (Multiverse's MAP_POPULATE change, without touching Racket)")
            );
            out!("{}", fig12.render(out));
            if let Some(py) = &r.cpython {
                outln!();
                outln!(
                    "{}",
                    out.bold("A second runtime: CPython threads across the LWK's CPUs")
                );
                outln!(
                    "{} threads.py {} threads × {} rounds, --cpus {}: native {:.3} s, LWK {:.3} s, LWK + lwk-threads \
                     {:.3} s (override/LWK {} {}); threads made by clone {} → {}; identical output: {}",
                    py.python,
                    py.threads,
                    py.rounds,
                    py.cpus,
                    py.native_s,
                    py.lwk_s,
                    py.lwk_override_s,
                    out.num(py.override_ratio, 3),
                    ci(py.override_ci),
                    py.clones,
                    py.clones_override,
                    if py.identical_output { "yes" } else { "NO" }
                );
            }
            for h in &r.hotspots {
                outln!();
                outln!(
                    "{}",
                    out.bold(&format!(
                        "Hot spots of {} and the override file written from them",
                        h.program
                    ))
                );
                for (event, count, caller, via) in &h.top {
                    outln!(
                        "  {event} × {count} from {caller}{}",
                        via.as_ref().map(|v| format!(" (via {v})")).unwrap_or_default()
                    );
                }
                outln!(
                    "  overrides: {}; events that left the guest {} → {}, delegated {} → {}; identical output: {}",
                    if h.overrides.is_empty() {
                        "none".to_string()
                    } else {
                        h.overrides.join(", ")
                    },
                    h.events,
                    h.events_with,
                    h.delegated,
                    h.delegated_with,
                    if h.identical_output { "yes" } else { "NO" }
                );
            }
            outln!();
            outln!(
                "{}",
                out.bold(&format!(
                    "Runs slower than {} × their variant's median (warm-up runs excluded)",
                    multiverse::verdict::OUTLIER_FACTOR
                ))
            );
            if r.rows.iter().all(|x| x.outliers.is_empty()) {
                outln!("none");
            } else {
                out!("{}", outliers.render(out));
            }
            outln!();
            outln!(
                "{}",
                out.bold(
                    "The issue's targets, decided by the paired 95 % intervals (undecided: the interval straddles the limit)"
                )
            );
            out!("{}", verdicts.render(out));
        }
    }
    let mut bad: Vec<&str> = r
        .rows
        .iter()
        .filter(|x| !x.identical_output)
        .map(|x| x.name.as_str())
        .collect();
    bad.extend(
        r.prefault
            .iter()
            .filter(|f| !f.identical_output)
            .map(|f| f.name.as_str()),
    );
    if r.cpython.as_ref().is_some_and(|p| !p.identical_output) {
        bad.push("cpython");
    }
    if !bad.is_empty() {
        eprintln!(
            "multios bench multiverse: output differs from native for {}",
            bad.join(", ")
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
