//! The files of a measurement (`--out DIR`): every sample as CSV and Parquet, the full report as JSON, one
//! LogGOPSim-style trace per run, and the samples-over-time figure.

use crate::clock::Clock;
use crate::figures;
use crate::measure::{Kind, Series};
use crate::report::{self, Report};
use std::path::{Path, PathBuf};

/// An error writing the output files.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    #[error("cannot write {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("cannot write the figure: {0}")]
    Plot(#[from] multios_plot::PlotError),
    #[error("cannot encode the report: {0}")]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Samples(#[from] multios_columns::ColumnsError),
}

/// A label as a file-name part: lower-case ASCII letters and digits, runs of others as one '-'.
pub fn slug(s: &str) -> String {
    let mut o = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            o.push(c.to_ascii_lowercase());
        } else if !o.ends_with('-') {
            o.push('-');
        }
    }
    o.trim_matches('-').to_string()
}

/// Writes `samples.csv` (and `samples.parquet`, the same rows), `report.json`, `<label>-cpuN[-runK].trace` (and `.goal`, the same noise as a
/// LogGOPSim schedule, see `goal.rs`) and `<kind>.{png,svg,csv}`
/// (the figure shows each configuration's first run) into `dir`; returns the paths written.
pub fn write(
    dir: &Path,
    kind: Kind,
    runs: &[(String, Series)],
    reports: &[Report],
    clock: &Clock,
) -> Result<Vec<PathBuf>, FilesError> {
    let io = |p: &Path| {
        let path = p.display().to_string();
        move |source| FilesError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let samples = report::samples_table(runs);
    let pq = dir.join("samples.parquet");
    samples.write_parquet(&pq)?;
    let mut files = vec![pq];
    let mut put = |name: String, text: String| -> Result<(), FilesError> {
        let p = dir.join(name);
        std::fs::write(&p, text).map_err(io(&p))?;
        files.push(p);
        Ok(())
    };
    put("samples.csv".into(), samples.to_csv()?)?;
    let json = serde_json::json!({ "clock": clock, "reports": reports });
    put("report.json".into(), serde_json::to_string_pretty(&json)?)?;
    let mut seen: Vec<(String, usize)> = Vec::new();
    let mut first_runs = Vec::new();
    for (label, s) in runs {
        let k = seen.iter().filter(|x| x.0 == *label && x.1 == s.cpu).count();
        seen.push((label.clone(), s.cpu));
        let suffix = if k > 0 {
            format!("-run{}", k + 1)
        } else {
            String::new()
        };
        let trace = report::trace_of(s);
        put(
            format!("{}-cpu{}{suffix}.trace", slug(label), s.cpu),
            trace.to_text(),
        )?;
        // the same noise as a LogGOPSim GOAL schedule (8 ranks, 100 steps of one quantum each)
        let shape = crate::goal::GoalConfig {
            ranks: 8,
            steps: 100,
            work_ns: s.quantum_ns.round().max(1.0) as u64,
        };
        if let Ok(g) = crate::goal::goal(&trace, &shape) {
            put(format!("{}-cpu{}{suffix}.goal", slug(label), s.cpu), g)?;
        }
        if k == 0 {
            first_runs.push((label.clone(), s.clone()));
        }
    }
    let name = match kind {
        Kind::Fwq => "fwq",
        Kind::Ftq => "ftq",
        Kind::Selfish => "selfish",
    };
    let fig = figures::samples_over_time(&format!("{} samples over time", name.to_uppercase()), &first_runs);
    let w = multios_plot::write(&fig, &dir.join(name))?;
    files.extend([w.png, w.svg, w.csv]);
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        assert_eq!(
            slug("load on CPU 0 (same), affinity"),
            "load-on-cpu-0-same-affinity"
        );
        assert_eq!(slug("idle · LWK"), "idle-lwk");
    }
}
