//! From raw samples to the numbers reported: statistics, detour histogram, spectrum, trace, CSV.

use crate::measure::{Kind, Series};
use crate::spectrum::{self, Peak};
use crate::stats::{self, Bucket, Summary};
use crate::trace::NoiseTrace;
use serde::Serialize;
use std::fmt::Write as _;

/// Everything reported for one benchmark run on one CPU.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The configuration's name (e.g. "idle", "stress-ng same CPU / affinity").
    pub label: String,
    pub kind: Kind,
    pub cpu: usize,
    pub quantum_ns: f64,
    pub elapsed_ns: f64,
    pub samples: usize,
    /// Statistics of the samples: FWQ ns per quantum; FTQ work units per slot; selfish gap ns.
    pub summary: Option<Summary>,
    /// FWQ: Σ(t − t_min)/Σt; FTQ: Σ(c_max − c)/(n·c_max); selfish: Σ detour time / elapsed; in %.
    pub noise_pct: f64,
    pub detours: usize,
    pub detour_ns_total: f64,
    pub detour_histogram: Vec<Bucket>,
    /// Dominant periods of the FTQ series (strongest first); empty for FWQ and selfish.
    pub peaks: Vec<Peak>,
    pub fundamental_hz: Option<f64>,
    /// Selfish: the shortest loop iteration (ns).
    pub min_iteration_ns: f64,
}

/// Summarises one series.
pub fn report(label: &str, s: &Series) -> Report {
    let values: Vec<f64> = s.samples.iter().map(|x| x.1).collect();
    let summary = Summary::of(&values);
    let detour_ns_total: f64 = s.detours.iter().map(|d| d.1).sum();
    let noise_pct = match s.kind {
        Kind::Fwq => summary.as_ref().map(|x| x.noise_pct).unwrap_or(0.0),
        Kind::Ftq => stats::ftq_noise_pct(&values),
        Kind::Selfish => {
            if s.elapsed_ns > 0.0 {
                100.0 * detour_ns_total / s.elapsed_ns
            } else {
                0.0
            }
        }
    };
    let peaks = if s.kind == Kind::Ftq {
        spectrum::dominant_periods(&values, s.quantum_ns * 1e-9, 8)
    } else {
        Vec::new()
    };
    let fundamental_hz = spectrum::fundamental(&peaks).map(|p| p.freq_hz);
    Report {
        label: label.to_string(),
        kind: s.kind,
        cpu: s.cpu,
        quantum_ns: s.quantum_ns,
        elapsed_ns: s.elapsed_ns,
        samples: s.samples.len(),
        summary,
        noise_pct,
        detours: s.detours.len(),
        detour_ns_total,
        detour_histogram: stats::log2_histogram(s.detours.iter().map(|d| d.1)),
        peaks,
        fundamental_hz,
        min_iteration_ns: s.min_iteration_ns,
    }
}

/// The detours of a series as a cyclic trace covering the measured time.
pub fn trace_of(s: &Series) -> NoiseTrace {
    NoiseTrace::new(s.elapsed_ns, s.detours.clone())
}

/// CSV of every sample: label, cpu, kind, start_ns, value.
pub fn samples_csv(runs: &[(String, Series)]) -> String {
    let mut out = String::from("label,cpu,kind,start_ns,value\n");
    for (label, s) in runs {
        let kind = match s.kind {
            Kind::Fwq => "fwq_ns",
            Kind::Ftq => "ftq_units",
            Kind::Selfish => "selfish_gap_ns",
        };
        let label = label.replace(',', ";");
        for (t, v) in &s.samples {
            let _ = writeln!(out, "{label},{},{kind},{t:.0},{v:.1}", s.cpu);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(kind: Kind, values: &[f64]) -> Series {
        Series {
            kind,
            cpu: 0,
            quantum_ns: 1000.0,
            unit_ns: 2.0,
            min_iteration_ns: 0.0,
            elapsed_ns: values.len() as f64 * 1000.0,
            samples: values
                .iter()
                .enumerate()
                .map(|(i, &v)| (i as f64 * 1000.0, v))
                .collect(),
            detours: vec![(500.0, 100.0), (900.0, 3000.0)],
            ran_on: Some(0),
        }
    }

    #[test]
    fn reports_fwq_and_ftq() {
        let r = report("idle", &series(Kind::Fwq, &[1000.0, 1000.0, 1100.0, 4000.0]));
        assert!((r.noise_pct - 100.0 * 3100.0 / 7100.0).abs() < 1e-9);
        assert_eq!(r.detours, 2);
        assert_eq!(r.detour_histogram.len(), 2);
        let xs: Vec<f64> = (0..1024)
            .map(|i| if i % 16 == 0 { 400.0 } else { 500.0 })
            .collect();
        let r = report("ftq", &series(Kind::Ftq, &xs));
        let f = r.fundamental_hz.unwrap_or(0.0);
        assert!((f - 1e9 / 16_000.0).abs() < 1e3, "{f}");
        let csv = samples_csv(&[("a,b".into(), series(Kind::Fwq, &[1.0]))]);
        assert_eq!(csv, "label,cpu,kind,start_ns,value\na;b,0,fwq_ns,0,1.0\n");
    }
}
