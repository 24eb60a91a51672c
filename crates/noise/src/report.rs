//! From raw samples to the numbers reported: statistics, detour histogram, spectrum, trace, CSV.

use crate::measure::{Kind, Series};
use crate::spectrum::{self, Peak};
use crate::stats::{self, Bucket, Summary};
use crate::trace::NoiseTrace;
use serde::Serialize;

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
    /// Other tasks' and the hypervisor's use of the measured CPU meanwhile, when known.
    pub usage: Option<crate::cpustat::Usage>,
}

/// Summarises one series.
pub fn report(label: &str, s: &Series) -> Report {
    let values: Vec<f64> = s.samples.iter().map(|x| x.1).collect();
    let summary = Summary::of(&values);
    let detour_ns_total: f64 = s.detours.iter().map(|d| d.1).fold(0.0, |a, b| a + b);
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
        usage: s.usage,
    }
}

/// The detours of a series as a cyclic trace covering the measured time.
pub fn trace_of(s: &Series) -> NoiseTrace {
    NoiseTrace::new(s.elapsed_ns, s.detours.clone())
}

/// CSV of every sample: label, cpu, kind, start_ns, value.
pub fn samples_csv(runs: &[(String, Series)]) -> String {
    samples_table(runs).to_csv().unwrap_or_default()
}

/// Every sample of `runs`, one row each: label, cpu, kind, start_ns, value (`samples.csv` and
/// `samples.parquet` are this table).
pub fn samples_table(runs: &[(String, Series)]) -> multios_columns::Table {
    use multios_columns::Values;
    let n: usize = runs.iter().map(|(_, s)| s.samples.len()).sum();
    let (mut label, mut cpu, mut kind) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let (mut start, mut value) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for (l, s) in runs {
        let k = match s.kind {
            Kind::Fwq => "fwq_ns",
            Kind::Ftq => "ftq_units",
            Kind::Selfish => "selfish_gap_ns",
        };
        for &(t, v) in &s.samples {
            label.push(l.clone());
            cpu.push(s.cpu as i64);
            kind.push(k.to_string());
            start.push(Some(t));
            value.push(Some(v));
        }
    }
    multios_columns::Table::new()
        .with("label", Values::Text(label))
        .with("cpu", Values::Int(cpu))
        .with("kind", Values::Text(kind))
        .with("start_ns", Values::Float(start))
        .with("value", Values::Float(value))
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
            usage: None,
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
        assert_eq!(csv, "label,cpu,kind,start_ns,value\n\"a,b\",0,fwq_ns,0.0,1.0\n");
    }
}

/// Repeated runs of one configuration, summarised by medians (this VM is shared and noisy: single
/// runs swing, medians over interleaved repetitions do not).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Aggregate {
    pub label: String,
    pub cpu: usize,
    pub runs: usize,
    /// Median over the runs of each run's median sample.
    pub median: f64,
    /// Median over the runs of each run's p99.
    pub p99: f64,
    pub noise_pct_median: f64,
    pub noise_pct_min: f64,
    pub noise_pct_max: f64,
    /// Medians over the runs of the other tasks' and the steal share of the measured CPU (%).
    pub others_pct: Option<f64>,
    pub steal_pct: Option<f64>,
}

/// Groups reports by (label, cpu) in first-seen order and takes medians over the runs.
pub fn aggregate(reports: &[Report]) -> Vec<Aggregate> {
    let mut keys: Vec<(String, usize)> = Vec::new();
    for r in reports {
        let k = (r.label.clone(), r.cpu);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let med = |v: Vec<f64>| multios_stats::median(&v).unwrap_or(f64::NAN);
    let opt_med = |v: Vec<f64>| if v.is_empty() { None } else { Some(med(v)) };
    keys.into_iter()
        .map(|(label, cpu)| {
            let rs: Vec<&Report> = reports
                .iter()
                .filter(|r| r.label == label && r.cpu == cpu)
                .collect();
            let noise: Vec<f64> = rs.iter().map(|r| r.noise_pct).collect();
            Aggregate {
                runs: rs.len(),
                median: med(rs
                    .iter()
                    .filter_map(|r| r.summary.as_ref().map(|s| s.median))
                    .collect()),
                p99: med(rs
                    .iter()
                    .filter_map(|r| r.summary.as_ref().map(|s| s.p99))
                    .collect()),
                noise_pct_median: med(noise.clone()),
                noise_pct_min: noise.iter().copied().fold(f64::INFINITY, f64::min),
                noise_pct_max: noise.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                others_pct: opt_med(rs.iter().filter_map(|r| r.usage.map(|u| u.others_pct)).collect()),
                steal_pct: opt_med(rs.iter().filter_map(|r| r.usage.map(|u| u.steal_pct)).collect()),
                label,
                cpu,
            }
        })
        .collect()
}

#[cfg(test)]
mod aggregate_tests {
    use super::*;

    #[test]
    fn medians_over_runs() {
        let mk = |label: &str, noise: f64, median: f64| Report {
            label: label.into(),
            kind: Kind::Fwq,
            cpu: 0,
            quantum_ns: 1.0,
            elapsed_ns: 1.0,
            samples: 1,
            summary: Summary::of(&[median]),
            noise_pct: noise,
            detours: 0,
            detour_ns_total: 0.0,
            detour_histogram: Vec::new(),
            peaks: Vec::new(),
            fundamental_hz: None,
            min_iteration_ns: 0.0,
            usage: None,
        };
        let rs = [
            mk("a", 1.0, 10.0),
            mk("b", 50.0, 20.0),
            mk("a", 3.0, 30.0),
            mk("a", 2.0, 11.0),
        ];
        let ag = aggregate(&rs);
        assert_eq!(ag.len(), 2);
        assert_eq!((ag[0].label.as_str(), ag[0].runs), ("a", 3));
        assert_eq!(
            (ag[0].noise_pct_median, ag[0].noise_pct_min, ag[0].noise_pct_max),
            (2.0, 1.0, 3.0)
        );
        assert_eq!(ag[0].median, 11.0);
        assert_eq!(ag[1].noise_pct_median, 50.0);
    }
}

/// Several ranks' series as one (e.g. FWQ on every rank under mpirun): all samples and detours,
/// sorted by start time; the CPU is the lowest of them.
pub fn merge(series: &[Series]) -> Option<Series> {
    let first = series.first()?;
    let mut m = first.clone();
    m.cpu = series.iter().map(|s| s.cpu).min().unwrap_or(first.cpu);
    m.samples = series.iter().flat_map(|s| s.samples.iter().copied()).collect();
    m.samples.sort_by(|a, b| a.0.total_cmp(&b.0));
    m.detours = series.iter().flat_map(|s| s.detours.iter().copied()).collect();
    m.detours.sort_by(|a, b| a.0.total_cmp(&b.0));
    m.elapsed_ns = series.iter().map(|s| s.elapsed_ns).fold(0.0, f64::max);
    m.ran_on = None;
    Some(m)
}
