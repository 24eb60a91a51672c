//! Every measured row predicted from three calibrations of one run, so that what tagging the
//! calibration by cross-CPU level changes is seen on the same measurements:
//! - **pooled**: every calibration run whatever its level (the fit before the level was known);
//! - **per level**: each IPC repeat (and each program) by the calibration of the level probed
//!   around it ([`levels::per_level`]), the row's prediction the median over its repeats;
//! - **linear**: the same with the calibration as a line in the round trip
//!   ([`levels::at_round_trip`]).

use super::calibrate::Round;
use super::ipc::{self, Predicted, Row};
use super::levels;
use super::programs::{self, ProgramRow};
use super::{accuracy, median, model, Accuracy, Context};
use multios_map::project::HopModel;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    Pooled,
    PerLevel,
    /// Per level for the arrangements whose pairs cross between the CPUs only.
    PerLevelCrossing,
    Linear,
}

/// The calibrations of one run.
pub struct Calibrations<'a> {
    /// Every calibration round (for the line in the round trip).
    pub rounds: &'a [Round],
    pub per_run: u64,
    pub cpus: usize,
    pub per_hop: f64,
    pub ref_hops: u32,
    pub pooled: HopModel,
    /// The levels seen (ns, ascending) and the model fitted at each.
    pub levels: Vec<f64>,
    pub per_level: Vec<HopModel>,
    pub per_level_crossing: Vec<HopModel>,
}

impl Calibrations<'_> {
    /// The model `v` gives at round trip `level_ns` (the pooled one without a probe).
    pub fn model(&self, v: Variant, level_ns: Option<f64>) -> HopModel {
        let Some(ns) = level_ns.filter(|x| x.is_finite()) else {
            return self.pooled;
        };
        match v {
            Variant::Pooled => self.pooled,
            Variant::PerLevel => levels::nearest(&self.levels, ns)
                .and_then(|k| self.per_level.get(k).copied())
                .unwrap_or(self.pooled),
            Variant::PerLevelCrossing => levels::nearest(&self.levels, ns)
                .and_then(|k| self.per_level_crossing.get(k).copied())
                .unwrap_or(self.pooled),
            Variant::Linear => model(
                &levels::at_round_trip(self.rounds, ns, self.per_run, self.cpus),
                self.per_hop,
                self.ref_hops,
            ),
        }
    }
}

/// `ctx` with the model `hop`.
fn with(ctx: &Context, hop: HopModel) -> Context {
    Context { hop, ..ctx.clone() }
}

/// Row `r` under `v`: each repeat predicted at its level, the medians over the repeats.
pub fn ipc_row(ctx: &Context, cal: &Calibrations, v: Variant, r: &Row) -> Predicted {
    let mut at: Vec<Option<f64>> = r.levels.iter().map(|l| Some(l.level_ns)).collect();
    if at.is_empty() || v == Variant::Pooled {
        at = vec![None];
    }
    let p: Vec<(f64, f64, f64)> = at
        .into_iter()
        .map(|ns| ipc::predict(&with(ctx, cal.model(v, ns)), r))
        .collect();
    let m = |f: fn(&(f64, f64, f64)) -> f64| median(&p.iter().map(f).collect::<Vec<_>>());
    Predicted {
        round_robin_us: m(|x| x.0),
        map_us: m(|x| x.1),
        linux_us: m(|x| x.2),
    }
}

/// Program `r` under `v` at the level probed around it: (anchored prediction, model's placed
/// time, model's time with every node free), s.
pub fn program(ctx: &Context, cal: &Calibrations, v: Variant, r: &ProgramRow) -> (f64, f64, f64) {
    let mut x = r.clone();
    programs::predict(&with(ctx, cal.model(v, r.level_ns)), &mut x);
    (x.predicted_map_s, x.model_map_s, x.model_linux_s)
}

/// The accuracy of one calibration's predictions.
#[derive(Debug, Clone, Serialize)]
pub struct Accuracies {
    pub ipc: Accuracy,
    pub ipc_round_robin: Accuracy,
    pub ipc_map: Accuracy,
    pub ipc_linux: Accuracy,
    pub programs: Accuracy,
    pub programs_model: Accuracy,
}

/// The accuracy of `pred` (one per IPC row) and `progs` ((anchored, model) per program).
pub fn accuracies(
    rows: &[Row],
    pred: &[Predicted],
    progs: &[(f64, f64)],
    prog_rows: &[ProgramRow],
) -> Accuracies {
    let pairs = |f: fn(&Predicted, &Row) -> (f64, f64)| -> Vec<(f64, f64)> {
        pred.iter().zip(rows).map(|(p, r)| f(p, r)).collect()
    };
    let rr = pairs(|p, r| (p.round_robin_us, r.round_robin_us));
    let map = pairs(|p, r| (p.map_us, r.map_us));
    let on = |f: fn(&(f64, f64)) -> f64| -> Vec<(f64, f64)> {
        progs
            .iter()
            .zip(prog_rows)
            .map(|(p, r)| (f(p), r.map_s))
            .collect()
    };
    Accuracies {
        ipc: accuracy(&[rr.clone(), map.clone()].concat()),
        ipc_round_robin: accuracy(&rr),
        ipc_map: accuracy(&map),
        ipc_linux: accuracy(&pairs(|p, r| (p.linux_us, r.linux_us))),
        programs: accuracy(&on(|p| p.0)),
        programs_model: accuracy(&on(|p| p.1)),
    }
}

/// Predicts every row under `v`, records the predictions in the rows (per level: as the rows' own;
/// pooled and linear: beside them) and returns their accuracy.
pub fn apply(
    ctx: &Context,
    cal: &Calibrations,
    v: Variant,
    ipc: &mut [Row],
    progs: &mut [ProgramRow],
) -> Accuracies {
    let pred: Vec<Predicted> = ipc.iter().map(|r| ipc_row(ctx, cal, v, r)).collect();
    let prog: Vec<(f64, f64, f64)> = progs.iter().map(|r| program(ctx, cal, v, r)).collect();
    let pm: Vec<(f64, f64)> = prog.iter().map(|p| (p.0, p.1)).collect();
    let acc = accuracies(ipc, &pred, &pm, progs);
    for (r, p) in ipc.iter_mut().zip(&pred) {
        match v {
            Variant::PerLevel => {
                r.predicted_round_robin_us = p.round_robin_us;
                r.predicted_map_us = p.map_us;
                r.predicted_linux_us = p.linux_us;
            }
            Variant::Pooled => r.predicted_pooled = *p,
            Variant::PerLevelCrossing => r.predicted_crossing = *p,
            Variant::Linear => r.predicted_linear = *p,
        }
    }
    if v == Variant::PerLevel {
        for (r, p) in progs.iter_mut().zip(&prog) {
            (r.predicted_map_s, r.model_map_s, r.model_linux_s) = *p;
        }
    }
    acc
}
