//! `multios model naive|refined|queue|sweep|fit|advise`.

use crate::output::{Format, Out, Table};
use anyhow::Context;
use multios_model::{self as model, GPrime, Params, Policy, Workload};
use multios_profile::Profile;
use multios_units::{format_secs, Duration};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    sub: Sub,
}

#[derive(clap::Subcommand, Debug)]
enum Sub {
    /// Naïve model S_n = (p + (1−p)/γ)⁻¹ (eq. 3)
    Naive(NaiveArgs),
    /// Refined model with per-syscall times, policy b(s) and forwarding cost (eq. 4–11)
    Refined(RefinedArgs),
    /// Queueing delay of delegation: M/M/1 (eq. 12–13) or M/M/c with Erlang C
    Queue(QueueArgs),
    /// Speedup as one parameter varies (γ, f_c or the fraction forwarded)
    Sweep(SweepArgs),
    /// Solve for γ given a measured speedup; aggregate γ; accuracy of (predicted, measured) pairs
    Fit(FitArgs),
    /// Which k system calls to implement in the LWK to maximise S_r
    Advise(AdviseArgs),
    /// Should this workload's calls go to the AAM OS machine? (refined model, f_c = a machine
    /// call's one-way cost, every call delegated)
    Aam(super::model_aam::AamArgs),
}

/// Where the workload (C and per-syscall n, g) comes from.
#[derive(clap::Args, Debug, Clone)]
pub struct WorkloadArgs {
    /// A multios profile (JSON)
    #[arg(long, conflicts_with = "syscall")]
    pub profile: Option<PathBuf>,
    /// Instead of a profile: a call NAME:COUNT:TOTAL_TIME (e.g. mmap:75252:0s), repeatable
    #[arg(long, value_name = "NAME:N:G")]
    pub syscall: Vec<String>,
    /// Instead of a profile: the compute time C (e.g. 23.8s)
    #[arg(long, requires = "syscall")]
    pub compute: Option<Duration>,
}

impl WorkloadArgs {
    pub fn load(&self) -> anyhow::Result<(Workload, Option<Profile>)> {
        if let Some(path) = &self.profile {
            let p = multios_profile::load(path)?;
            return Ok((Workload::from_profile(&p), Some(p)));
        }
        if self.syscall.is_empty() {
            anyhow::bail!("no workload: pass --profile FILE, or --compute C with --syscall NAME:COUNT:TIME");
        }
        let c = self.compute.map(Duration::secs).unwrap_or(0.0);
        let mut calls = Vec::new();
        for spec in &self.syscall {
            let parts: Vec<&str> = spec.split(':').collect();
            let [name, n, g] = parts[..] else {
                anyhow::bail!("--syscall '{spec}': expected NAME:COUNT:TOTAL_TIME, e.g. read:1000:2ms");
            };
            if multios_syscalls::by_name(name).is_none() {
                anyhow::bail!(
                    "--syscall '{spec}': {}",
                    multios_syscalls::UnknownSyscall::new(name)
                );
            }
            let n: u64 = n
                .parse()
                .with_context(|| format!("--syscall '{spec}': COUNT '{n}' is not an integer"))?;
            let g = Duration::parse(g).with_context(|| format!("--syscall '{spec}': TOTAL_TIME"))?;
            calls.push(model::Call {
                name: name.to_string(),
                n,
                g: g.secs(),
            });
        }
        Ok((Workload { c, calls }, None))
    }
}

/// γ, f_c, policy and the per-syscall refinements.
#[derive(clap::Args, Debug, Clone)]
pub struct ParamArgs {
    /// γ: compute speedup of the LWK over Linux
    #[arg(long, default_value_t = 1.0)]
    pub gamma: f64,
    /// f_c: one-way forwarding cost (2·f_c per delegated call), e.g. 10us, 3.14us, 750cycles@2.2GHz
    #[arg(long, default_value = "0ns")]
    pub fc: Duration,
    /// b(s): all, none, mckernel, mos, mktrace, list:FILE, least:F, most:F, random:F[:SEED]
    #[arg(long, default_value = "all")]
    pub policy: Policy,
    /// Per-syscall f_c, NAME=DURATION (repeatable), e.g. write=40us (`emulate` spells it
    /// --fc-syscall; both spellings work on both commands)
    #[arg(long, visible_alias = "fc-syscall", value_name = "NAME=DUR")]
    pub fc_for: Vec<String>,
    /// Per-syscall g' (LWK implementation time): NAME=DURATION per call, or NAME=xFACTOR of g (repeatable)
    #[arg(long, value_name = "NAME=DUR|xF")]
    pub g_prime: Vec<String>,
    /// W: queueing delay added to every delegated call (see `multios model queue`)
    #[arg(long, default_value = "0ns")]
    pub wait: Duration,
}

impl ParamArgs {
    pub fn params(&self) -> anyhow::Result<Params> {
        let mut p = Params::new(self.gamma, self.fc.secs());
        p.wait_per_call = self.wait.secs();
        for spec in &self.fc_for {
            let (name, d) =
                multios_syscalls::per_call_duration(spec).map_err(|e| anyhow::anyhow!("--fc-for {e}"))?;
            p.fc_per_syscall.insert(name.to_string(), d.secs());
        }
        for spec in &self.g_prime {
            let (name, v) =
                multios_syscalls::split_per_call(spec).map_err(|e| anyhow::anyhow!("--g-prime {e}"))?;
            let g = match v.strip_prefix('x') {
                Some(f) => GPrime::Factor(
                    f.parse()
                        .with_context(|| format!("--g-prime '{spec}': factor '{f}' is not a number"))?,
                ),
                None => GPrime::PerCall(
                    Duration::parse(v)
                        .with_context(|| format!("--g-prime '{spec}'"))?
                        .secs(),
                ),
            };
            p.g_prime.insert(name.to_string(), g);
        }
        Ok(p)
    }
}

fn parse_list(flag: &str, s: &str) -> anyhow::Result<Vec<f64>> {
    s.split(',')
        .map(|x| {
            x.trim()
                .parse::<f64>()
                .with_context(|| format!("{flag}: '{x}' is not a number"))
        })
        .collect()
}

pub fn run(args: Args, out: &Out) -> super::Exit {
    match args.sub {
        Sub::Naive(a) => naive(a, out),
        Sub::Refined(a) => refined(a, out),
        Sub::Queue(a) => queue(a, out),
        Sub::Sweep(a) => sweep(a, out),
        Sub::Fit(a) => fit(a, out),
        Sub::Advise(a) => advise(a, out),
        Sub::Aam(a) => super::model_aam::run(a, out),
    }
}

// ---------------------------------------------------------------- naive

#[derive(clap::Args, Debug)]
struct NaiveArgs {
    /// p: share of time in system calls, in [0, 1]
    #[arg(long, conflicts_with_all = ["profile", "paper_table1"])]
    p: Option<f64>,
    /// Take p from a profile
    #[arg(long, conflicts_with = "paper_table1")]
    profile: Option<PathBuf>,
    /// Use the p values of the paper's Table 1 (reproduces Fig. 3)
    #[arg(long)]
    paper_table1: bool,
    /// γ values, comma-separated
    #[arg(long, default_value = "2,10")]
    gamma: String,
}

fn naive(a: NaiveArgs, out: &Out) -> super::Exit {
    let gammas = parse_list("--gamma", &a.gamma)?;
    let rows: Vec<(String, f64)> = if a.paper_table1 {
        model::paper::TABLE1
            .iter()
            .map(|(n, _, p)| (n.to_string(), *p))
            .collect()
    } else if let Some(path) = &a.profile {
        let p = multios_profile::load(path)?;
        vec![(label_of(&p, path), p.p())]
    } else if let Some(p) = a.p {
        vec![("p".to_string(), p)]
    } else {
        anyhow::bail!("give --p P (e.g. --p 0.0374), --profile FILE or --paper-table1");
    };
    let mut t = Table::new(
        std::iter::once("workload".to_string())
            .chain(std::iter::once("p".into()))
            .chain(gammas.iter().map(|g| format!("S_n(γ={g})"))),
    );
    for (name, p) in rows {
        let mut r = vec![name, out.num(p, 8)];
        for g in &gammas {
            r.push(out.num(model::naive(p, *g)?, 4));
        }
        t.row(r);
    }
    t.print(out);
    Ok(ExitCode::SUCCESS)
}

fn label_of(p: &Profile, path: &std::path::Path) -> String {
    p.program().map(str::to_string).unwrap_or_else(|| {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    })
}

// ---------------------------------------------------------------- refined

#[derive(clap::Args, Debug)]
struct RefinedArgs {
    #[command(flatten)]
    workload: WorkloadArgs,
    #[command(flatten)]
    params: ParamArgs,
    /// Rows of the per-syscall breakdown to show (0 = all)
    #[arg(long, default_value_t = 15)]
    top: usize,
}

fn refined(a: RefinedArgs, out: &Out) -> super::Exit {
    let (w, _) = a.workload.load()?;
    let params = a.params.params()?;
    let d = a.params.policy.delegated(&w);
    let pr = model::refined(&w, &d, &params)?;
    if out.format == Format::Json {
        out.json(&pr)?;
        return Ok(ExitCode::SUCCESS);
    }
    if out.format == Format::Table {
        print_projection(&pr, &a.params.policy.label(), out);
    }
    let mut rows = pr.breakdown.clone();
    rows.sort_by(|x, y| y.t_d.total_cmp(&x.t_d));
    let n = if a.top == 0 {
        rows.len()
    } else {
        a.top.min(rows.len())
    };
    let mut t = Table::new(["syscall", "n(s)", "g(s)", "b(s)", "f(s)", "in t_d"]);
    for b in rows.iter().take(n) {
        t.row([
            b.name.clone(),
            b.n.to_string(),
            out.secs(b.g),
            u8::from(b.delegated).to_string(),
            out.secs(b.f),
            out.secs(b.t_d),
        ]);
    }
    t.print(out);
    if out.format == Format::Table && n < rows.len() {
        outln!("… {} more (use --top 0 for all)", rows.len() - n);
    }
    Ok(ExitCode::SUCCESS)
}

pub fn print_projection(pr: &model::Projection, policy: &str, out: &Out) {
    outln!(
        "{}  γ = {}, f_c = {}, policy = {policy}",
        out.bold("refined model"),
        pr.gamma,
        format_secs(pr.fc)
    );
    outln!(
        "  C = {}   Σg = {}   p = {:.4}%   calls = {}",
        format_secs(pr.c),
        format_secs(pr.sum_g),
        pr.p * 100.0,
        pr.total_calls
    );
    outln!(
        "  delegated: {} of {} distinct syscalls, {} of {} calls; forwarding Σf = {}{}",
        pr.delegated_syscalls,
        pr.distinct_syscalls,
        pr.delegated_calls,
        pr.total_calls,
        format_secs(pr.forwarding),
        if pr.queueing > 0.0 {
            format!(", queueing ΣW·n = {}", format_secs(pr.queueing))
        } else {
            String::new()
        }
    );
    outln!(
        "  t_nd = {}   t_d = {}   {} = {:.4}   (naïve S_n = {:.4})",
        format_secs(pr.t_nd),
        format_secs(pr.t_d),
        out.bold("S_r"),
        pr.speedup,
        pr.naive
    );
}

// ---------------------------------------------------------------- queue

#[derive(clap::Args, Debug)]
struct QueueArgs {
    /// Arrival rates λ_k per delegator thread (requests/s), comma-separated
    #[arg(long, conflicts_with = "profile")]
    lambda: Option<String>,
    /// Service rate μ of one delegate (requests/s); default from the profile: Σn/Σg of delegated calls
    #[arg(long)]
    mu: Option<f64>,
    /// c: number of delegates (1 = the paper's M/M/1)
    #[arg(long, default_value_t = 1)]
    servers: u32,
    /// Derive λ_k and μ from a profile's threads and delegated calls, and project S_r with W added
    #[arg(long)]
    profile: Option<PathBuf>,
    #[command(flatten)]
    params: ParamArgs,
}

fn queue(a: QueueArgs, out: &Out) -> super::Exit {
    let (q, proj) = if let Some(path) = &a.profile {
        let p = multios_profile::load(path)?;
        let w = Workload::from_profile(&p);
        let d = a.params.policy.delegated(&w);
        let threads: Vec<(u64, f64)> = p.threads.iter().map(|t| (t.syscalls, t.lifetime_s)).collect();
        let mut q = model::QueueParams::from_workload(&w, &d, &threads, p.wall_time_s, a.servers)?;
        if let Some(mu) = a.mu {
            q.mu = mu;
        }
        (q, Some((w, d)))
    } else {
        let Some(l) = &a.lambda else {
            anyhow::bail!("give --lambda L1,L2,… and --mu M, or --profile FILE");
        };
        let Some(mu) = a.mu else {
            anyhow::bail!("--mu is required with --lambda (requests per second)")
        };
        (
            model::QueueParams {
                lambdas: parse_list("--lambda", l)?,
                mu,
                servers: a.servers,
            },
            None,
        )
    };
    let r = model::mmc(&q)?;
    let projection = match proj {
        Some((w, d)) => {
            let mut params = a.params.params()?;
            params.wait_per_call = r.wait;
            Some(model::refined(&w, &d, &params)?)
        }
        None => None,
    };
    if out.format == Format::Json {
        out.json(&serde_json::json!({ "queue": r, "projection": projection }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = Table::new(["λ (1/s)", "μ (1/s)", "c", "ρ", "P(wait)", "W", "W + 1/μ"]);
    t.row([
        format!("{:.6e}", r.lambda),
        format!("{:.6e}", r.mu),
        r.servers.to_string(),
        format!("{:.4}", r.rho),
        format!("{:.4}", r.p_wait),
        out.secs(r.wait),
        out.secs(r.response),
    ]);
    t.print(out);
    if let (Some(pr), Format::Table) = (&projection, out.format) {
        print_projection(pr, &a.params.policy.label(), out);
    }
    Ok(ExitCode::SUCCESS)
}

// ---------------------------------------------------------------- sweep

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum Over {
    Gamma,
    Fc,
    Fraction,
}

#[derive(clap::Args, Debug)]
struct SweepArgs {
    #[command(flatten)]
    workload: WorkloadArgs,
    #[command(flatten)]
    params: ParamArgs,
    /// The parameter to vary (fraction: least-frequent calls forwarded, overriding --policy)
    #[arg(long, value_enum)]
    over: Over,
    /// First value (γ and fraction: a number; f_c: a duration)
    #[arg(long)]
    from: String,
    /// Last value
    #[arg(long)]
    to: String,
    #[arg(long, default_value_t = 10)]
    steps: usize,
}

fn sweep(a: SweepArgs, out: &Out) -> super::Exit {
    let (w, _) = a.workload.load()?;
    let base = a.params.params()?;
    let num = |flag: &str, s: &str| -> anyhow::Result<f64> {
        match a.over {
            Over::Fc => Ok(Duration::parse(s).with_context(|| flag.to_string())?.secs()),
            _ => s
                .parse::<f64>()
                .with_context(|| format!("{flag}: '{s}' is not a number")),
        }
    };
    let (lo, hi) = (num("--from", &a.from)?, num("--to", &a.to)?);
    let over = match a.over {
        Over::Gamma => model::sweep::Over::Gamma,
        Over::Fc => model::sweep::Over::Fc,
        Over::Fraction => model::sweep::Over::Fraction,
    };
    let mut t = Table::new([
        match a.over {
            Over::Gamma => "gamma",
            Over::Fc => "fc_s",
            Over::Fraction => "fraction",
        },
        "S_r",
        "S_n",
    ]);
    for pt in model::sweep::sweep(&w, &a.params.policy, &base, over, (lo, hi), a.steps)? {
        t.row([
            format!("{}", pt.x),
            format!("{:.6}", pt.refined),
            format!("{:.6}", pt.naive),
        ]);
    }
    t.print(out);
    Ok(ExitCode::SUCCESS)
}

// ---------------------------------------------------------------- fit

#[derive(clap::Args, Debug)]
struct FitArgs {
    #[command(flatten)]
    workload: Option<WorkloadArgs>,
    #[command(flatten)]
    params: ParamArgs,
    /// Measured speedup (native time / multi-OS time) to solve the refined model for γ
    #[arg(long)]
    measured: Option<f64>,
    /// CSV with columns name,predicted,measured: prints the accuracy (100 − MAPE)
    #[arg(long)]
    pairs: Option<PathBuf>,
    /// Per-benchmark γ values to aggregate by the median, comma-separated
    #[arg(long)]
    gammas: Option<String>,
}

fn fit(a: FitArgs, out: &Out) -> super::Exit {
    let mut report = serde_json::Map::new();
    if let Some(s) = a.measured {
        let Some(wa) = &a.workload else {
            anyhow::bail!("--measured needs a workload: --profile FILE")
        };
        let (w, _) = wa.load()?;
        let params = a.params.params()?;
        let d = a.params.policy.delegated(&w);
        let g = model::fit_gamma_refined(&w, &d, &params, s)?;
        let gn = model::fit_gamma_naive(w.p(), s).ok();
        report.insert("gamma_refined".into(), g.into());
        report.insert("gamma_naive".into(), gn.into());
        if out.format == Format::Table {
            outln!(
                "measured S = {s}: refined γ = {g:.6}{}",
                gn.map(|g| format!(", naïve γ = {g:.6}")).unwrap_or_default()
            );
        }
    }
    if let Some(list) = &a.gammas {
        let v = parse_list("--gammas", list)?;
        // γ is a speedup: finite and > 0 (NaN was skipped by the median, 0 and negatives taken).
        if let Some(bad) = v.iter().find(|g| !g.is_finite() || **g <= 0.0) {
            anyhow::bail!("--gammas: {bad} is not a compute speedup γ (a finite number > 0, e.g. 1.04)");
        }
        let m = model::median(&v).context("--gammas: no finite values")?;
        report.insert("gamma_median".into(), m.into());
        if out.format == Format::Table {
            outln!("median γ over {} benchmarks = {m:.6}", v.len());
        }
    }
    if let Some(path) = &a.pairs {
        let text = multios_profile::read_bounded(path)?;
        let pairs = model::parse_pairs(&path.display().to_string(), &text)?;
        let acc = model::accuracy(&pairs)?;
        report.insert("accuracy_percent".into(), acc.into());
        report.insert("pairs".into(), pairs.len().into());
        if out.format == Format::Table {
            outln!("accuracy (100 − MAPE) over {} pairs = {acc:.2}%", pairs.len());
        }
    }
    if report.is_empty() {
        anyhow::bail!("nothing to fit: give --measured S (with --profile), --gammas LIST or --pairs FILE");
    }
    if out.format != Format::Table {
        out.json(&report)?;
    }
    Ok(ExitCode::SUCCESS)
}

// ---------------------------------------------------------------- advise

#[derive(clap::Args, Debug)]
struct AdviseArgs {
    #[command(flatten)]
    workload: WorkloadArgs,
    #[command(flatten)]
    params: ParamArgs,
    /// k: how many system calls you can afford to implement in the LWK
    #[arg(long)]
    budget: usize,
}

fn advise(a: AdviseArgs, out: &Out) -> super::Exit {
    let (w, _) = a.workload.load()?;
    let params = a.params.params()?;
    let d: BTreeSet<String> = a.params.policy.delegated(&w);
    let adv = model::advise(&w, &d, &params, a.budget)?;
    if out.format == Format::Json {
        out.json(&adv)?;
        return Ok(ExitCode::SUCCESS);
    }
    if out.format == Format::Table {
        outln!(
            "port these {} call(s) to the LWK: S_r {:.4} → {:.4} (γ = {}, f_c = {}, starting from policy {})",
            adv.port.len(),
            adv.before.speedup,
            adv.after.speedup,
            params.gamma,
            format_secs(params.fc),
            a.params.policy.label()
        );
    }
    let mut t = Table::new(["syscall", "n(s)", "saves", "S_r after"]);
    for i in &adv.port {
        t.row([
            i.name.clone(),
            i.n.to_string(),
            out.secs(i.saving),
            format!("{:.6}", i.speedup_after),
        ]);
    }
    t.print(out);
    Ok(ExitCode::SUCCESS)
}
