//! `multios map record|show|partition|place|run` (issue #12, NetworkedOS): thin front end over
//! multios-map.

use crate::output::{Format, Out, Table};
use anyhow::Context;
use multios_map::decide::{self, Decision};
use multios_map::partition::{greedy, louvain, Weights};
use multios_map::place::{self, Placement, Strategy};
use multios_map::project::{self, HopModel};
use multios_map::{export, record, run as maprun, CostModel, Graph, Partition, Topology};
use multios_units::Duration;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    sub: Sub,
}

#[derive(clap::Subcommand, Debug)]
enum Sub {
    /// Record the multi-layer graph of one run (eBPF; root or CAP_BPF+CAP_PERFMON)
    Record(RecordArgs),
    /// Draw a graph with its clusters and placement (SVG; DOT and GraphML too)
    Show(ShowArgs),
    /// Overlapping greedy partitioning minimizing T, against Louvain
    Partition(PartitionArgs),
    /// Place the nodes on a topology: affinity (the paper's O(P)), TreeMatch-style, round-robin
    Place(PlaceArgs),
    /// Run a program with a placement applied as its threads appear
    Run(RunArgs),
}

#[derive(clap::Args, Debug, Clone)]
struct CostArgs {
    /// The cost model as JSON (`multios bench map --costs FILE` writes the one it measures); the
    /// flags below override its fields. Default: rounded from a calibration on a 2-vCPU VM
    #[arg(long)]
    costs: Option<PathBuf>,
    /// Two CPUs: CPU ns per message, wake-up, futex wake or signal (sender and receiver together)
    #[arg(long)]
    ns_per_event: Option<f64>,
    /// Two CPUs: CPU ns per byte moved
    #[arg(long)]
    ns_per_byte: Option<f64>,
    /// One CPU: ns per message when both ends share a CPU
    #[arg(long)]
    local_ns_per_event: Option<f64>,
    /// One CPU: ns per byte when both ends share a CPU
    #[arg(long)]
    local_ns_per_byte: Option<f64>,
    /// Latency a blocking wake-up adds when the woken task's CPU is otherwise idle (ns)
    #[arg(long)]
    idle_wake_ns: Option<f64>,
    /// ns per shared resident page and round trip when the sharers run apart
    #[arg(long)]
    ns_per_shared_page: Option<f64>,
    /// Topology: an hwloc XML file (`lstopo --of xml FILE.xml`) or an hwloc synthetic string ("pack:2 core:64 pu:1", or what `lstopo --of synthetic` prints); default this machine
    #[arg(long)]
    topology: Option<String>,
    /// Seed of the partitioners' random node order
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// What `--costs FILE` holds: the whole calibrated model (`multios bench map --costs FILE` writes
/// it: the cost model, the measured curves and stretches) or the cost model alone.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum CostsFile {
    Model(Box<HopModel>),
    Cost(CostModel),
}

impl CostArgs {
    fn file(&self) -> anyhow::Result<Option<CostsFile>> {
        let Some(p) = &self.costs else {
            return Ok(None);
        };
        let text = multios_host::input::read_to_string_capped(p, 16 << 20)
            .with_context(|| format!("--costs {}", p.display()))?;
        let f = serde_json::from_str::<CostsFile>(&text).with_context(|| {
            format!(
                "--costs {}: neither a model nor a cost model (write one with `multios bench map --costs FILE`)",
                p.display()
            )
        })?;
        Ok(Some(f))
    }

    fn cost(&self) -> anyhow::Result<CostModel> {
        let c = match self.file()? {
            Some(CostsFile::Model(m)) => m.cost,
            Some(CostsFile::Cost(c)) => c,
            None => CostModel::default(),
        };
        self.overridden(c)
    }

    /// The model the predictions use: the file's whole model when it holds one (its cost model
    /// with the flags applied), otherwise the linear model of [`CostArgs::cost`]; the distance
    /// scaling from `per_hop` and `ref_hops` either way.
    fn model(&self, per_hop: f64, ref_hops: u32) -> anyhow::Result<HopModel> {
        check_per_hop(per_hop)?;
        let mut m = match self.file()? {
            Some(CostsFile::Model(m)) => {
                if m.curves.is_some_and(|c| c.packed.is_none()) {
                    // written before the calibration measured many pinned pairs (h-map3)
                    eprintln!(
                        "warning: --costs {}: no `packed` curve (written by an older `bench map`): pairs pinned on several busy CPUs are priced from the one-CPU crowding × parallel_ipc, which the quiet runs found optimistic; rewrite it with `multios bench map --costs FILE`",
                        self.costs.as_deref().map(|p| p.display().to_string()).unwrap_or_default()
                    );
                }
                *m
            }
            Some(CostsFile::Cost(c)) => HopModel::linear(c, per_hop, ref_hops),
            None => HopModel::linear(CostModel::default(), per_hop, ref_hops),
        };
        m.cost = self.overridden(m.cost)?;
        m.per_hop = per_hop;
        m.ref_hops = ref_hops;
        Ok(m)
    }

    fn overridden(&self, mut c: CostModel) -> anyhow::Result<CostModel> {
        for (v, field) in [
            (self.ns_per_event, &mut c.ns_per_event),
            (self.ns_per_byte, &mut c.ns_per_byte),
            (self.local_ns_per_event, &mut c.local_ns_per_event),
            (self.local_ns_per_byte, &mut c.local_ns_per_byte),
            (self.idle_wake_ns, &mut c.ns_per_idle_wake),
            (self.ns_per_shared_page, &mut c.ns_per_shared_page),
        ] {
            if let Some(v) = v {
                *field = v;
            }
        }
        for (flag, field, v) in [
            ("--ns-per-event", "ns_per_event", c.ns_per_event),
            ("--ns-per-byte", "ns_per_byte", c.ns_per_byte),
            ("--local-ns-per-event", "local_ns_per_event", c.local_ns_per_event),
            ("--local-ns-per-byte", "local_ns_per_byte", c.local_ns_per_byte),
            ("--idle-wake-ns", "ns_per_idle_wake", c.ns_per_idle_wake),
            ("--ns-per-shared-page", "ns_per_shared_page", c.ns_per_shared_page),
        ] {
            // Bounded too: 1e308 ns per event made every prediction inf (and the decision on it).
            if !v.is_finite() || !(0.0..=MAX_COST_NS).contains(&v) {
                anyhow::bail!(
                    "{flag} (or {field} in --costs) must be a non-negative number of ns up to {MAX_COST_NS:e}, got {}",
                    short(v)
                );
            }
        }
        Ok(c)
    }
    fn topology(&self) -> anyhow::Result<Topology> {
        Topology::resolve(self.topology.as_deref()).context("--topology")
    }
}

#[derive(clap::Args, Debug)]
struct RecordArgs {
    /// Where the graph (JSON) goes
    #[arg(short, long)]
    output: PathBuf,
    /// Attach to this running process instead of starting a command
    #[arg(short, long)]
    pid: Option<u32>,
    /// With -p: stop after this long (default: when the process exits)
    #[arg(long)]
    duration: Option<Duration>,
    /// Page samples (/proc/PID/pagemap) at this interval
    #[arg(long, default_value = "50ms")]
    sample_every: Duration,
    /// Store this topology in the graph: hwloc XML file or synthetic string (default this machine's)
    #[arg(long)]
    topology: Option<String>,
    /// The command (its words passed to exec as given, any bytes)
    #[arg(last = true)]
    command: Vec<OsString>,
}

#[derive(clap::Args, Debug)]
struct ShowArgs {
    graph: PathBuf,
    /// Picture: .png or .svg (drawn here), or the graph as .dot or .graphml
    #[arg(short, long)]
    output: PathBuf,
    /// Placement drawn on the nodes
    #[arg(long, default_value = "affinity", value_parser = parse_strategy)]
    strategy: Strategy,
    #[command(flatten)]
    cost: CostArgs,
}

#[derive(clap::Args, Debug)]
struct PartitionArgs {
    graph: PathBuf,
    /// Also list T at every level of the hierarchy
    #[arg(long)]
    levels: bool,
    #[command(flatten)]
    cost: CostArgs,
}

#[derive(clap::Args, Debug)]
struct PlaceArgs {
    graph: PathBuf,
    /// Write the affinity placement as a taskset script
    #[arg(long)]
    taskset: Option<PathBuf>,
    /// Write the affinity placement as an Open MPI rankfile
    #[arg(long)]
    rankfile: Option<PathBuf>,
    /// Write the affinity placement as a cgroup cpuset description
    #[arg(long)]
    cpuset: Option<PathBuf>,
    /// Also list every node's CPU under each strategy
    #[arg(long)]
    nodes: bool,
    /// Projection: extra cost per hop beyond the first (fraction of the one-hop cost; not measurable on 2 CPUs)
    #[arg(long, default_value_t = 0.5)]
    per_hop: f64,
    /// Projection: the distance (hops) the costs were calibrated at (2: two cores of one cache)
    #[arg(long, default_value_t = 2)]
    ref_hops: u32,
    /// `map run` applies the affinity placement only when the model predicts it more than this
    /// fraction faster than Linux's placement (every thread free)
    #[arg(long, default_value_t = decide::MARGIN)]
    margin: f64,
    #[command(flatten)]
    cost: CostArgs,
}

#[derive(clap::Args, Debug)]
struct RunArgs {
    /// A recorded graph to place (affinity strategy on this machine)
    #[arg(long, conflicts_with = "learn")]
    graph: Option<PathBuf>,
    /// Record a first run, place it, then run again with the placement
    #[arg(long)]
    learn: bool,
    /// Placement strategy
    #[arg(long, default_value = "affinity", value_parser = parse_strategy)]
    strategy: Strategy,
    /// How often pinned groups are checked for contention (new threads are placed from the
    /// kernel's process events as they appear; /proc is walked only when events were lost)
    #[arg(long, default_value = "100ms")]
    sweep: Duration,
    /// Apply the placement only when the model predicts it more than this fraction faster than
    /// Linux's placement (every thread free); otherwise nothing is pinned
    #[arg(long, default_value_t = decide::MARGIN)]
    margin: f64,
    /// Apply the placement even when the model predicts it no faster than Linux's
    #[arg(long)]
    force_placement: bool,
    #[command(flatten)]
    cost: CostArgs,
    /// The command (its words passed to exec as given, any bytes)
    #[arg(last = true)]
    command: Vec<OsString>,
}

fn parse_strategy(s: &str) -> Result<Strategy, String> {
    Strategy::ALL
        .iter()
        .copied()
        .find(|k| k.name() == s)
        .ok_or_else(|| {
            let names: Vec<&str> = Strategy::ALL.iter().map(|k| k.name()).collect();
            format!("unknown strategy '{s}'; one of {}", names.join(", "))
        })
}

pub fn run(args: Args, out: &Out) -> super::Exit {
    match args.sub {
        Sub::Record(a) => cmd_record(a, out),
        Sub::Show(a) => cmd_show(a, out),
        Sub::Partition(a) => cmd_partition(a, out),
        Sub::Place(a) => cmd_place(a, out),
        Sub::Run(a) => cmd_run(a, out),
    }
}

fn std_duration(d: Duration) -> std::time::Duration {
    std::time::Duration::from_secs_f64(d.secs().max(0.0))
}

fn load(path: &Path) -> anyhow::Result<Graph> {
    Ok(Graph::load(path)?)
}

/// On stderr: a recording made beside other load (more than [`CONTENDED_SHARE`] of the CPUs'
/// time), whose interaction may not be the program's on a quiet machine.
///
/// [`CONTENDED_SHARE`]: multios_map::graph::CONTENDED_SHARE
fn note_other_load(cmd: &str, g: &Graph) {
    if let Some(share) = g
        .other_load_share()
        .filter(|&s| s > multios_map::graph::CONTENDED_SHARE)
    {
        eprintln!(
            "multios {cmd}: note: other tasks ran {:.0} % of the CPUs' time during the recording: the run shared the machine with other load, and a program's interaction can change with that (a producer/consumer pair woke each other 5–10× less beside two CPU hogs); record on the machine and load the placement is for",
            share * 100.0
        );
    }
}

fn cmd_record(a: RecordArgs, out: &Out) -> super::Exit {
    let topology = Some(Topology::resolve(a.topology.as_deref()).context("--topology")?);
    if !a.command.is_empty() && a.pid.is_some() {
        anyhow::bail!("give either -p PID or a command after `--`, not both");
    }
    // A graph that cannot be written is known before the program runs.
    multios_host::output::check_writable(&a.output).with_context(|| format!("-o {}", a.output.display()))?;
    let r = record::record(&record::Options {
        command: a.command,
        pid: a.pid,
        duration: a.duration.map(std_duration),
        sample_every: std_duration(a.sample_every),
        topology,
    })?;
    r.graph.save(&a.output)?;
    let g = &r.graph;
    note_other_load("map record", g);
    if out.format == Format::Json {
        out.json(g)?;
    } else {
        // `across`: the wake-ups after which the woken thread ran on another CPU than its waker's
        let mut t = Table::new(["kind", "edges", "bytes", "count", "across"]);
        for k in multios_map::EdgeKind::ALL {
            let es: Vec<_> = g.edges.iter().filter(|e| e.kind == k).collect();
            let across: Option<u64> = es.iter().map(|e| e.across).sum();
            t.row([
                k.name().to_string(),
                es.len().to_string(),
                es.iter().map(|e| e.bytes).sum::<u64>().to_string(),
                es.iter().map(|e| e.count).sum::<u64>().to_string(),
                match (k, across) {
                    (multios_map::EdgeKind::Wakeup, Some(a)) => a.to_string(),
                    _ => "-".to_string(),
                },
            ]);
        }
        if out.format == Format::Table {
            outln!(
                "{} nodes ({} processes), {} edges, {} shared-page pairs in {:.3} s → {}",
                g.nodes.len(),
                g.nodes.iter().filter(|n| n.id == n.tgid).count(),
                g.edges.len(),
                g.shared_pages.len(),
                g.duration_s,
                a.output.display()
            );
        }
        t.print(out);
    }
    // The command's own failure is reported, not hidden.
    Ok(match r.exit_code {
        Some(0) | None => ExitCode::SUCCESS,
        Some(c) => ExitCode::from(c.clamp(1, 255) as u8),
    })
}

/// The overlapping partition (node ids per cluster) and its placement.
fn partition_and_place(
    g: &Graph,
    c: &CostArgs,
    strategy: Strategy,
) -> anyhow::Result<(Partition, Placement, Topology)> {
    let cost = c.cost()?;
    let topo = c.topology()?;
    let w = Weights::new(g, &cost);
    let part = greedy::partition(&w, Some(topo.len()), c.seed).partition;
    let placement = place::place(g, &part, &topo, &cost, strategy);
    Ok((part, placement, topo))
}

fn ids(g: &Graph, p: &Partition) -> Vec<Vec<u32>> {
    p.clusters
        .iter()
        .map(|c| {
            c.members
                .iter()
                .filter_map(|&m| g.nodes.get(m).map(|n| n.id))
                .collect()
        })
        .collect()
}

fn cmd_show(a: ShowArgs, out: &Out) -> super::Exit {
    let g = load(&a.graph)?;
    let (part, placement, topo) = partition_and_place(&g, &a.cost, a.strategy)?;
    let clusters = ids(&g, &part);
    let cpu_of: Vec<(u32, u32)> = placement.nodes.iter().map(|n| (n.id, n.cpu)).collect();
    let ext = a
        .output
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let title = if g.command.is_empty() {
        a.graph.display().to_string()
    } else {
        g.command.join(" ")
    };
    let _ = topo;
    let text = match ext.as_str() {
        "svg" | "png" => {
            let cost = a.cost.cost()?;
            let pic = export::picture::layout(&g, &clusters, &placement, &cost, &title);
            export::picture::write(pic, &a.output, ext == "svg")
                .map_err(|e| anyhow::anyhow!("-o {}: {e}", a.output.display()))?;
            if out.format == Format::Table {
                outln!("{}", a.output.display());
            }
            return Ok(ExitCode::SUCCESS);
        }
        "dot" | "gv" => export::graph::dot(&g, &clusters, &cpu_of),
        "graphml" => export::graph::graphml(&g, &cpu_of),
        "" => anyhow::bail!(
            "-o {}: the file name has no extension to say what to write; end it with .png, .svg, .dot or .graphml",
            a.output.display()
        ),
        other => anyhow::bail!(
            "-o {}: unknown picture type '.{}'; use .png, .svg, .dot or .graphml",
            a.output.display(),
            crate::output::printable(other)
        ),
    };
    std::fs::write(&a.output, text).with_context(|| format!("writing {}", a.output.display()))?;
    if out.format == Format::Table {
        outln!("{}", a.output.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn cmd_partition(a: PartitionArgs, out: &Out) -> super::Exit {
    let g = load(&a.graph)?;
    let cost = a.cost.cost()?;
    let topo = a.cost.topology()?;
    let w = Weights::new(&g, &cost);
    let cores = Some(topo.len());
    let ours = greedy::partition(&w, cores, a.cost.seed);
    let louv = louvain::partition(&w, a.cost.seed);
    let lq = louv.quality(&w, cores);
    let one = Partition::flat(vec![(0..w.len()).collect()], 0).quality(&w, cores);
    let single = Partition::flat((0..w.len()).map(|i| vec![i]).collect(), 0).quality(&w, cores);
    if out.format == Format::Json {
        out.json(&serde_json::json!({
            "topology": topo.describe(),
            "cost": cost,
            "networkedos": { "quality": ours.quality, "clusters": ids(&g, &ours.partition), "levels": ours.levels },
            "louvain": { "quality": lq, "clusters": ids(&g, &louv) },
            "one_cluster": one,
            "singletons": single,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = Table::new([
        "method",
        "N",
        "replicated",
        "T (ms)",
        "W_seq (ms)",
        "W_par (ms)",
        "W_c (ms)",
    ]);
    let ms = |v: f64| fixed3(v / 1e6);
    for (name, q) in [
        ("networkedos", ours.quality),
        ("louvain", lq),
        ("one cluster", one),
        ("singletons", single),
    ] {
        t.row([
            name.to_string(),
            q.n.to_string(),
            q.replicated.to_string(),
            ms(q.t),
            ms(q.w_seq),
            ms(q.w_par),
            ms(q.w_c),
        ]);
    }
    if out.format == Format::Table {
        outln!(
            "{} nodes on {}; N capped at {} PUs",
            w.len(),
            topo.describe(),
            topo.len()
        );
    }
    t.print(out);
    if out.format == Format::Table {
        for (c, members) in ids(&g, &ours.partition).iter().enumerate() {
            let names: Vec<String> = members
                .iter()
                .map(|id| {
                    format!(
                        "{}:{id}",
                        g.nodes
                            .iter()
                            .find(|n| n.id == *id)
                            .map_or("?".into(), |n| crate::output::printable(&n.comm))
                    )
                })
                .collect();
            outln!("cluster {c}: {}", names.join(" "));
        }
        if a.levels {
            for l in &ours.levels {
                outln!(
                    "level {}: N = {}, T = {} ms",
                    l.level,
                    l.quality.n,
                    ms(l.quality.t)
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn cmd_place(a: PlaceArgs, out: &Out) -> super::Exit {
    let g = load(&a.graph)?;
    let cost = a.cost.cost()?;
    let topo = a.cost.topology()?;
    let w = Weights::new(&g, &cost);
    let part = greedy::partition(&w, Some(topo.len()), a.cost.seed).partition;
    check_margin(a.margin)?;
    let hop = a.cost.model(a.per_hop, a.ref_hops)?;
    let placements: Vec<Placement> = Strategy::ALL
        .iter()
        .map(|&s| place::place(&g, &part, &topo, &cost, s))
        .collect();
    let predicted: Vec<f64> = placements
        .iter()
        .map(|p| {
            let pu: Vec<usize> = p.nodes.iter().map(|n| n.pu).collect();
            let free: Vec<bool> = p.nodes.iter().map(|n| !n.pinned).collect();
            project::bounds(&w, &topo, &pu, &free, &hop).ns
        })
        .collect();
    let affinity = &placements[0];
    // what `map run` would do with the affinity placement: its time against Linux's (every node free)
    let decision = decide::decide(&w, &topo, affinity, &hop, a.margin, false);
    for (path, text) in [
        (&a.taskset, export::placement::taskset(affinity)),
        (&a.rankfile, export::placement::rankfile(affinity)),
        (&a.cpuset, export::placement::cpuset(affinity)),
    ] {
        if let Some(p) = path {
            std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))?;
        }
    }
    if out.format == Format::Json {
        let rows: Vec<_> = placements
            .iter()
            .zip(&predicted)
            .map(|(p, t)| serde_json::json!({ "placement": p, "predicted_ns": t }))
            .collect();
        out.json(&serde_json::json!({
            "topology": topo.describe(),
            "per_hop": a.per_hop,
            "placements": rows,
            "linux_predicted_ns": decision.linux_s * 1e9,
            "decision": decision,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let base = placements
        .iter()
        .find(|p| p.strategy == Strategy::Treematch)
        .map(|p| p.costs.hop_byte)
        .unwrap_or(0.0);
    let mut t = Table::new([
        "strategy",
        "SUM_COM (ms)",
        "MAX_COM (ms)",
        "HOP_BYTE (ms·hop)",
        "HOP_BYTE / treematch",
        "predicted (ms)",
    ]);
    for (p, pred) in placements.iter().zip(&predicted) {
        t.row([
            p.strategy.name().to_string(),
            fixed3(p.costs.sum_com / 1e6),
            fixed3(p.costs.max_com / 1e6),
            fixed3(p.costs.hop_byte / 1e6),
            if base > 0.0 {
                fixed3(p.costs.hop_byte / base)
            } else {
                "-".into()
            },
            fixed3(pred / 1e6),
        ]);
    }
    t.row([
        "linux (nothing pinned)".to_string(),
        "-".into(),
        "-".into(),
        "-".into(),
        "-".into(),
        fixed3(decision.linux_s * 1e3),
    ]);
    if out.format == Format::Table {
        outln!(
            "{} nodes on {}; per-hop factor {} (assumed)",
            g.nodes.len(),
            topo.describe(),
            a.per_hop
        );
    }
    t.print(out);
    if out.format == Format::Table {
        outln!("map run: {}", decision_line(&decision));
    }
    if a.nodes && out.format == Format::Table {
        for p in &placements {
            let cells: Vec<String> = p
                .nodes
                .iter()
                .map(|n| {
                    let cpus: Vec<usize> = n.cpus().iter().map(|&c| c as usize).collect();
                    format!(
                        "{}:{}→{}",
                        crate::output::printable(&n.comm),
                        n.id,
                        multios_host::cpus::format_list(&cpus)
                    )
                })
                .collect();
            outln!("{}: {}", p.strategy.name(), cells.join(" "));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `v` with three decimals, never "-0.000" (−0.0, or a negative that rounds to 0).
fn fixed3(v: f64) -> String {
    let s = format!("{v:.3}");
    match s.strip_prefix('-') {
        Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
        _ => s,
    }
}

/// The largest cost parameter taken, ns (1000 s per event, byte, wake-up or page).
const MAX_COST_NS: f64 = 1e12;
/// The largest `--per-hop` taken: a hop 1000 times the calibrated cost.
const MAX_PER_HOP: f64 = 1000.0;

/// `--per-hop` (of `map` and `bench map`): a finite fraction in 0–[`MAX_PER_HOP`]; NaN or 1e308
/// made the predictions NaN or inf, and the placement decided on them.
pub(crate) fn check_per_hop(f: f64) -> anyhow::Result<()> {
    if !(0.0..=MAX_PER_HOP).contains(&f) {
        anyhow::bail!(
            "--per-hop must be a non-negative fraction of the calibrated cost up to {MAX_PER_HOP} (0.5: a hop further costs 50 % more), got {}",
            short(f)
        );
    }
    Ok(())
}

/// `v` for an error message: as given, or in e-notation when its digits would fill the line.
fn short(v: f64) -> String {
    if v.is_finite() && v != 0.0 && !(1e-6..1e15).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

fn check_margin(m: f64) -> anyhow::Result<()> {
    if !m.is_finite() || m < 0.0 {
        anyhow::bail!("--margin must be a non-negative fraction (0.1: 10 % faster), got {m}");
    }
    Ok(())
}

/// The decision in one line: what was chosen, and the model's two times.
fn decision_line(d: &Decision) -> String {
    let what = match (d.applies(), d.forced) {
        (true, true) => "applied (forced)",
        (true, false) => "applied",
        (false, _) => "Linux's (nothing pinned)",
    };
    let hint = if !d.applies() && d.pinned > 0 {
        "; --force-placement applies it anyway"
    } else {
        ""
    };
    format!("{what} — {}{hint}", d.reason)
}

fn cmd_run(a: RunArgs, out: &Out) -> super::Exit {
    if a.command.is_empty() {
        anyhow::bail!("give the command to run after `--`");
    }
    // a program that is not there is refused before anything runs (a --learn recording included)
    multios_map::program::resolve(&a.command[0])?;
    if a.cost.topology.is_some() {
        anyhow::bail!(
            "--topology: `map run` places on this machine; describe other machines with `map place`"
        );
    }
    // --learn runs the program twice: both runs read the same stdin (captured once unless it is
    // a terminal), and the learning run's output is discarded, so the program's output appears
    // once (it used to appear twice, and the placed run found its stdin used up).
    use multios_experiment::compare::{self, capture};
    let mut io = multios_map::ChildIo::default();
    let scratch = capture::Scratch::new()?;
    let g = match (&a.graph, a.learn) {
        (Some(p), _) => load(p)?,
        (None, true) => {
            let stdin = capture::capture_own_stdin(&scratch.0, compare::STDIN_CAP).map_err(|e| {
                anyhow::anyhow!("map run --learn: capturing stdin to replay it to both runs: {e}")
            })?;
            if stdin.truncated {
                eprintln!(
                    "warning: stdin is longer than {} bytes: both runs read only its first {} bytes",
                    compare::STDIN_CAP,
                    compare::STDIN_CAP
                );
            }
            if stdin.bytes.is_some() {
                io.stdin = Some(stdin.file.clone());
            }
            let learn = multios_map::ChildIo {
                stdin: io.stdin.clone(),
                quiet: true,
            };
            let r = record::record_io(
                &record::Options {
                    command: a.command.clone(),
                    pid: None,
                    duration: None,
                    sample_every: std::time::Duration::from_millis(50),
                    topology: None,
                },
                &learn,
            )?;
            eprintln!(
                "map run --learn: the learning run's output was discarded{}",
                match stdin.bytes {
                    Some(b) => format!("; both runs read the same {b} bytes of stdin"),
                    None => String::new(),
                }
            );
            r.graph
        }
        (None, false) => anyhow::bail!("give --graph FILE (from `map record`) or --learn"),
    };
    note_other_load("map run", &g);
    check_margin(a.margin)?;
    let topo = a.cost.topology()?;
    let model = a.cost.model(0.5, topo.max_hops())?;
    let plan = decide::plan(
        &g,
        &topo,
        &model,
        decide::Options {
            strategy: a.strategy,
            seed: a.cost.seed,
            margin: a.margin,
            force: a.force_placement,
        },
    );
    // the choice and why, on stderr whatever the format (the JSON report has it as `decision`)
    eprintln!("map run: placement {}", decision_line(&plan.decision));
    let rep = maprun::run_plan_io(&a.command, &plan, std_duration(a.sweep), &io)?;
    if out.format == Format::Json {
        out.json(&rep)?;
    } else {
        let mut t = Table::new(["tid", "comm", "cpus", "rule"]);
        for ap in &rep.applied {
            t.row([
                ap.tid.to_string(),
                ap.comm.clone(),
                ap.cpus.clone(),
                if ap.matched { "placed" } else { "no rule: all CPUs" }.to_string(),
            ]);
        }
        if out.format == Format::Table && !rep.watched {
            outln!(
                "nothing pinned: every thread may use every CPU this process may, as it inherits; the program ran unwatched, as Linux places it; {:.3} s",
                rep.wall_s
            );
        } else if out.format == Format::Table {
            outln!(
                "{} threads placed, {} unmatched; {} process events of the program ({} received from the whole machine), {} walks of /proc, {} overflows; event → placement {:.0} µs median, {:.0} µs max; the runner used {:.0} µs of CPU; {:.3} s",
                rep.applied.len(),
                rep.unmatched,
                rep.events,
                rep.received,
                rep.walks,
                rep.overflows,
                rep.apply_median_us,
                rep.apply_max_us,
                rep.runner_cpu_us,
                rep.wall_s
            );
            for r in &rep.released {
                outln!(
                    "CPU {}'s pinned groups released at {:.3} s: other programs had the CPU (the groups ran {:.0} % and waited {:.0} % of the last interval)",
                    r.cpu,
                    r.at_s,
                    100.0 * r.ran,
                    100.0 * r.waited
                );
            }
        }
        t.print(out);
    }
    Ok(match rep.exit_code {
        Some(0) => ExitCode::SUCCESS,
        Some(c) => ExitCode::from(c.clamp(1, 255) as u8),
        None => ExitCode::from(1),
    })
}
