//! `multios model aam` (issue #11): should this workload's calls go to the AAM OS machine?
//! Parses and prints only; the answer is multios_experiment::bench::aam_model.

use crate::output::{Format, Out, Table};
use multios_experiment::bench::aam_model::{self, CallCost};
use multios_model::Workload;
use multios_units::{format_secs, Duration};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct AamArgs {
    /// The workload: a multios profile (JSON)
    #[arg(long)]
    profile: Option<PathBuf>,
    /// f_c: one-way cost of a machine call to the OS machine, e.g. 250ns
    #[arg(long, conflicts_with = "measure")]
    call_cost: Option<Duration>,
    /// Measure f_c now: half the mean of a no-op machine call between the first and the last
    /// usable CPU, both machines polling
    #[arg(long)]
    measure: bool,
    /// No-op machine calls to measure with --measure
    #[arg(long, default_value_t = 5_000, requires = "measure")]
    iterations: usize,
    /// γ: gain of the compute core once its system calls are gone (1 = same core, same speed)
    #[arg(long, default_value_t = 1.0)]
    gamma: f64,
}

pub fn run(a: AamArgs, out: &Out) -> super::Exit {
    let Some(path) = &a.profile else {
        anyhow::bail!("model aam: no workload: pass --profile FILE (a profile from `multios profile`)");
    };
    let p = multios_profile::load(path)?;
    let w = Workload::from_profile(&p);
    let cost = match (a.call_cost, a.measure) {
        (Some(d), _) => CallCost::Given(d.secs()),
        (None, true) => CallCost::Measure {
            iterations: a.iterations,
        },
        (None, false) => anyhow::bail!(
            "model aam: no machine-call cost: pass --call-cost DURATION (e.g. 250ns) or --measure"
        ),
    };
    let r = aam_model::answer(&w, cost, a.gamma)?;
    match out.format {
        Format::Json => out.json(&r)?,
        Format::Csv => {
            let mut t = Table::new([
                "profile",
                "fc_s",
                "fc_source",
                "gamma",
                "t_nd_s",
                "t_d_s",
                "speedup",
                "verdict",
            ]);
            t.row([
                path.display().to_string(),
                r.fc_s.to_string(),
                r.fc_source.to_string(),
                r.gamma.to_string(),
                r.projection.t_nd.to_string(),
                r.projection.t_d.to_string(),
                r.speedup.to_string(),
                r.verdict.to_string(),
            ]);
            t.print(out);
        }
        Format::Table => {
            if let Some(m) = &r.measured {
                outln!(
                    "machine call measured now: CPU {} → {}, {} calls, median {:.0} ns, mean {:.0} ns issue to result",
                    m.client_cpu, m.server_cpu, m.iterations, m.median_ns, m.mean_ns
                );
            }
            super::model::print_projection(&r.projection, "all calls to the OS machine", out);
            outln!(
                "  f_c = {} ({})   break-even f_c = {}",
                format_secs(r.fc_s),
                r.fc_source,
                r.break_even_fc_s
                    .map(format_secs)
                    .unwrap_or_else(|| "none (no f_c ≥ 0 pays at this γ)".into())
            );
            outln!(
                "{}: S_r = {:.4} — sending this workload's calls to the OS machine {}",
                out.bold("verdict"),
                r.speedup,
                r.verdict
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
