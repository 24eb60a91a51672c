//! One stress-ng stressor, natively and in the LWK.

use super::junit::Outcome;
use super::limits::Kind;
use super::runner;
use super::stressng::{self, Status};
use super::{leftover_files, workdir, Config, Difference};
use crate::{ExperimentError, Progress};
use serde::Serialize;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// One side's run of a stressor.
#[derive(Debug, Clone, Serialize)]
pub struct StressSide {
    pub outcome: Outcome,
    /// stress-ng's verdict from its exit status, or the timeout.
    pub status: String,
    /// Bogo ops from `--metrics-brief`, when it printed them.
    pub bogo_ops: Option<u64>,
    pub seconds: f64,
    /// Processes still alive after stress-ng ended (killed) and files it left (removed).
    pub leftover_processes: usize,
    pub leftover_files: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct StressorResult {
    pub stressor: String,
    pub native: StressSide,
    pub lwk: StressSide,
    pub difference: Option<Difference>,
}

pub(super) fn stressor(
    cfg: &Config,
    dir: &Path,
    s: &str,
    progress: &mut dyn Progress,
) -> Result<StressorResult, ExperimentError> {
    let native = side(cfg, dir, s, false)?;
    progress.advance(&format!("stress-ng {s} native: {}", native.status));
    let lwk = side(cfg, dir, s, true)?;
    progress.advance(&format!("stress-ng {s} lwk: {}", lwk.status));
    let difference = (native.outcome != lwk.outcome).then(|| Difference {
        id: s.to_string(),
        native: native.outcome,
        lwk: lwk.outcome,
        detail: format!("native: {}; lwk: {}", native.status, lwk.status),
        cause: cfg.limits.cause(Kind::Stress, s),
    });
    Ok(StressorResult {
        stressor: s.to_string(),
        native,
        lwk,
        difference,
    })
}

fn side(cfg: &Config, dir: &Path, s: &str, in_lwk: bool) -> Result<StressSide, ExperimentError> {
    let tag = if in_lwk { "lwk" } else { "native" };
    let log = dir.join(format!("{tag}-stress-{s}.log"));
    let w = workdir(dir, &format!("{tag}-stress-{s}"))?;
    let mut cmd = if in_lwk {
        let mut c = Command::new(&cfg.launcher);
        c.args(["lwk", "run"])
            .args(&cfg.lwk_args)
            .arg("--")
            .arg(&cfg.stress_ng);
        c
    } else {
        Command::new(&cfg.stress_ng)
    };
    let t = format!("{}s", cfg.stress_seconds);
    cmd.arg(format!("--{s}"))
        .args(["1", "-t", &t, "--verify", "--metrics-brief", "--temp-path"])
        .arg(&w)
        .current_dir(&w)
        .env("TMPDIR", &w);
    // stress-ng stops its stressors after -t and reports; a run that takes a minute longer hangs.
    let limit = Duration::from_secs(cfg.stress_seconds + 60);
    let ran = runner::run(&mut cmd, limit, &log).map_err(ExperimentError::io(format!(
        "running stress-ng --{s} ({tag}, log {})",
        log.display()
    )))?;
    let output = std::fs::read(&log)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let (outcome, status) = match (ran.timed_out, ran.code) {
        (false, Some(c)) => {
            let st = Status::from_code(c);
            (st.outcome(), st.describe())
        }
        _ => (Outcome::Failed, ran.describe()),
    };
    Ok(StressSide {
        outcome,
        status,
        bogo_ops: stressng::bogo_ops(&output, s),
        seconds: ran.seconds,
        leftover_processes: ran.leftovers,
        leftover_files: leftover_files(&w),
    })
}
