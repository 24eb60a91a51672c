//! The report's data: what the page shows, every number computed here (the page only draws it).

use crate::error::ReportError;
use crate::results;
use multios_model::{self as model, Params, Policy, Workload};
use multios_profile::Profile;
use serde::Serialize;

/// What a report is made from.
#[derive(Debug, Clone)]
pub struct Inputs {
    pub profile: Profile,
    /// Where the profile came from (a path), used in the commands shown.
    pub profile_source: String,
    /// Result documents (`multios … --json` output, or profiles), each with its source (a path).
    pub results: Vec<(String, serde_json::Value)>,
    /// Policies to project (the policy language of `--policy`).
    pub policies: Vec<String>,
    pub gammas: Vec<f64>,
    /// f_c values as given (e.g. "10us"), kept as text for the commands shown.
    pub fcs: Vec<String>,
    /// The command line that made the report.
    pub command: String,
}

impl Inputs {
    /// The defaults of `multios report`: six policies, γ ∈ {1, 2, 4, 8, 16}, f_c ∈ {0, 1, 10, 100} µs.
    pub fn new(profile: Profile, profile_source: &str, command: &str) -> Self {
        Inputs {
            profile,
            profile_source: profile_source.to_string(),
            results: Vec::new(),
            policies: ["all", "mckernel", "mos", "mktrace", "least:0.9", "most:0.9"]
                .map(String::from)
                .to_vec(),
            gammas: vec![1.0, 2.0, 4.0, 8.0, 16.0],
            fcs: ["0ns", "1us", "10us", "100us"].map(String::from).to_vec(),
            command: command.to_string(),
        }
    }
}

/// Everything the page shows (embedded in it as JSON; `multios report --json` prints it).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub title: String,
    pub command: String,
    pub multios_version: String,
    pub profile: ProfileSummary,
    pub cdf: Cdf,
    pub policies: Vec<String>,
    pub gammas: Vec<f64>,
    pub fcs: Vec<String>,
    pub fcs_s: Vec<f64>,
    pub projections: Vec<ProjectionCell>,
    pub measured: Vec<Measured>,
    /// The page's sections in order, each with the command that produced it.
    pub sections: Vec<Section>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Section {
    pub id: String,
    pub title: String,
    pub produced_by: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProfileSummary {
    pub source: String,
    pub command: Vec<String>,
    pub tool: String,
    pub accuracy: String,
    pub partial: bool,
    pub wall_s: f64,
    pub compute_s: f64,
    pub syscall_s: f64,
    pub p: f64,
    pub calls: u64,
    pub threads: usize,
    pub notes: Vec<String>,
    pub rows: Vec<ProfileRow>,
}

/// One row of the profile table: the columns of `multios profile --csv`.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileRow {
    pub name: String,
    pub count: u64,
    pub total_s: f64,
    pub mean_s: f64,
    pub min_s: Option<f64>,
    pub max_s: Option<f64>,
    pub errors: u64,
    pub pct_wall: f64,
}

/// The syscall CDF (paper Fig. 6/12): the fraction of distinct calls invoked at most n times.
#[derive(Debug, Clone, Serialize)]
pub struct Cdf {
    pub points: Vec<(f64, f64)>,
}

/// S_r for one policy, γ and f_c (`multios model refined --json`'s `speedup`).
#[derive(Debug, Clone, Serialize)]
pub struct ProjectionCell {
    pub policy: String,
    pub gamma: f64,
    pub fc: String,
    pub fc_s: f64,
    pub speedup: f64,
    pub naive: f64,
    pub delegated_calls: u64,
    pub command: String,
}

/// One result file: a table, and measured-vs-projected pairs where it has them.
#[derive(Debug, Clone, Serialize)]
pub struct Measured {
    pub source: String,
    pub kind: String,
    pub produced_by: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<serde_json::Value>>,
    pub pairs: Vec<MeasuredRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MeasuredRow {
    pub label: String,
    pub measured: f64,
    pub projected: f64,
}

/// Computes the report's data.
pub fn build(inp: &Inputs) -> Result<Report, ReportError> {
    let p = &inp.profile;
    let w = Workload::from_profile(p);
    let src = &inp.profile_source;
    let fcs_s = inp
        .fcs
        .iter()
        .map(|t| {
            multios_units::Duration::parse(t)
                .map(multios_units::Duration::secs)
                .map_err(|source| ReportError::Fc {
                    text: t.clone(),
                    source,
                })
        })
        .collect::<Result<Vec<f64>, _>>()?;
    let mut projections = Vec::new();
    for pol in &inp.policies {
        let policy = Policy::parse(pol).map_err(|source| ReportError::Model {
            what: format!("--policy '{pol}'"),
            source,
        })?;
        let delegated = policy.delegated(&w);
        for &gamma in &inp.gammas {
            for (fc, &fc_s) in inp.fcs.iter().zip(&fcs_s) {
                let pr = model::refined(&w, &delegated, &Params::new(gamma, fc_s)).map_err(|source| {
                    ReportError::Model {
                        what: format!("projection γ = {gamma}, f_c = {fc}, policy {pol}"),
                        source,
                    }
                })?;
                projections.push(ProjectionCell {
                    policy: pol.clone(),
                    gamma,
                    fc: fc.clone(),
                    fc_s,
                    speedup: pr.speedup,
                    naive: pr.naive,
                    delegated_calls: pr.delegated_calls,
                    command: format!(
                        "multios model refined --profile {src} --gamma {gamma} --fc {fc} --policy {pol}"
                    ),
                });
            }
        }
    }
    let measured = inp
        .results
        .iter()
        .map(|(source, v)| results::measured(source, v))
        .collect::<Result<Vec<_>, _>>()?;
    let program = p.program().unwrap_or("program").to_string();
    let mut sections = vec![
        Section {
            id: "profile".into(),
            title: "Profile".into(),
            produced_by: produced_by(p, src),
        },
        Section {
            id: "cdf".into(),
            title: "System-call CDF".into(),
            produced_by: format!("multios plot fig6 --profile {src}"),
        },
        Section {
            id: "projections".into(),
            title: "Projections: policy × γ × f_c".into(),
            produced_by: format!(
                "multios model refined --profile {src} --gamma G --fc F --policy P (each cell names its own)"
            ),
        },
    ];
    if !measured.is_empty() {
        sections.push(Section {
            id: "measured".into(),
            title: "Measured against projected".into(),
            produced_by: measured
                .iter()
                .map(|m| format!("{} ({})", m.produced_by, m.source))
                .collect::<Vec<_>>()
                .join("; "),
        });
    }
    Ok(Report {
        title: format!("multios report: {program}"),
        command: inp.command.clone(),
        multios_version: env!("CARGO_PKG_VERSION").to_string(),
        profile: summary(p, src),
        cdf: Cdf {
            points: model::sweep::syscall_cdf(&w),
        },
        policies: inp.policies.clone(),
        gammas: inp.gammas.clone(),
        fcs: inp.fcs.clone(),
        fcs_s,
        projections,
        measured,
        sections,
    })
}

/// How a profile was made, as the command that would make it again.
fn produced_by(p: &Profile, src: &str) -> String {
    let cmd = p.command.join(" ");
    match p.collection.tool.as_str() {
        "multios-ebpf" => format!("multios profile --backend ebpf -o {src} -- {cmd}"),
        "multios-ptrace" => format!("multios profile --backend ptrace -o {src} -- {cmd}"),
        "multios-inproc" => format!("multios profile --backend inproc -o {src} -- {cmd}"),
        "multios-lwk" => format!("multios lwk run --profile {src} -- {cmd}"),
        tool => match &p.collection.source {
            Some(file) => format!("multios profile import {file} -o {src}  ({tool} of `{cmd}`)"),
            None => format!("{tool} of `{cmd}` → {src}"),
        },
    }
}

fn summary(p: &Profile, src: &str) -> ProfileSummary {
    let wall = p.wall_time_s;
    ProfileSummary {
        source: src.to_string(),
        command: p.command.clone(),
        tool: p.collection.tool.clone(),
        accuracy: p.collection.accuracy.clone(),
        partial: p.collection.partial,
        wall_s: wall,
        compute_s: p.compute_time_s,
        syscall_s: p.syscall_time_s(),
        p: p.p(),
        calls: p.syscall_count(),
        threads: p.threads.len(),
        notes: p.collection.notes.clone(),
        rows: p
            .syscalls
            .iter()
            .map(|s| ProfileRow {
                name: s.name.clone(),
                count: s.count,
                total_s: s.total_s,
                mean_s: s.mean_s(),
                min_s: s.min_s,
                max_s: s.max_s,
                errors: s.errors,
                pct_wall: if wall > 0.0 { 100.0 * s.total_s / wall } else { 0.0 },
            })
            .collect(),
    }
}
