//! One CPython test module, natively and in the LWK, and the per-test differences.

use super::junit::{self, Case, Outcome};
use super::limits::{Cause, Kind};
use super::runner::{self, Ran};
use super::{leftover_files, workdir, Config, Difference};
use crate::{ExperimentError, Progress};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// One side's run of a module.
#[derive(Debug, Clone, Serialize)]
pub struct PySide {
    pub run: usize,
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    /// How the interpreter ended (`exit 0`, `timed out after 900 s`, …).
    pub status: String,
    /// Where the per-test results came from: `junit`, `verbose` (the run died before writing
    /// its JUnit file) or `none`.
    pub source: &'static str,
    pub seconds: f64,
    /// Files the run left in its working directory (removed).
    pub leftover_files: usize,
    #[serde(skip)]
    pub ran: Option<Ran>,
    #[serde(skip)]
    pub cases: Vec<Case>,
}

impl PySide {
    /// The run finished and wrote its results.
    fn complete(&self) -> bool {
        self.source == "junit"
            && self
                .ran
                .as_ref()
                .is_some_and(|r| !r.timed_out && r.code.is_some())
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ModuleResult {
    pub module: String,
    pub native: PySide,
    pub lwk: PySide,
    pub differences: Vec<Difference>,
}

pub(super) fn module(
    cfg: &Config,
    dir: &Path,
    m: &str,
    progress: &mut dyn Progress,
) -> Result<ModuleResult, ExperimentError> {
    let native = side(cfg, dir, m, false)?;
    progress.advance(&format!("{m} native: {}", native.status));
    let lwk = side(cfg, dir, m, true)?;
    progress.advance(&format!("{m} lwk: {}", lwk.status));
    let differences = differences(cfg, m, &native, &lwk);
    Ok(ModuleResult {
        module: m.to_string(),
        native,
        lwk,
        differences,
    })
}

fn side(cfg: &Config, dir: &Path, m: &str, in_lwk: bool) -> Result<PySide, ExperimentError> {
    let tag = if in_lwk { "lwk" } else { "native" };
    let xml = dir.join(format!("{tag}-{m}.xml"));
    let log = dir.join(format!("{tag}-{m}.log"));
    let _ = std::fs::remove_file(&xml);
    let w = workdir(dir, &format!("{tag}-{m}"))?;
    let python = cfg.python.as_os_str();
    let mut cmd = if in_lwk {
        let mut c = Command::new(&cfg.launcher);
        c.args(["lwk", "run"]).args(&cfg.lwk_args).arg("--").arg(python);
        c
    } else {
        Command::new(python)
    };
    cmd.args(["-m", "test", "-v", m]);
    for pat in &cfg.ignore {
        cmd.args(["-i", pat]);
    }
    cmd.arg("--junit-xml").arg(&xml).current_dir(&w).env("TMPDIR", &w);
    let ran = runner::run(&mut cmd, cfg.module_timeout, &log).map_err(ExperimentError::io(format!(
        "running {} ({tag}, log {})",
        m,
        log.display()
    )))?;
    let leftover = leftover_files(&w);
    let (cases, source) = match std::fs::read_to_string(&xml) {
        Ok(text) => match junit::parse(&text, &xml.display().to_string()) {
            Ok(c) => (c, "junit"),
            Err(_) => (verbose(&log), "verbose"),
        },
        Err(_) => (verbose(&log), "verbose"),
    };
    let source = if cases.is_empty() && source == "verbose" {
        "none"
    } else {
        source
    };
    let count = |o| cases.iter().filter(|c| c.outcome == o).count();
    Ok(PySide {
        run: cases.len(),
        passed: count(Outcome::Passed),
        failed: count(Outcome::Failed),
        skipped: count(Outcome::Skipped),
        status: ran.describe(),
        source,
        seconds: ran.seconds,
        leftover_files: leftover,
        ran: Some(ran),
        cases,
    })
}

fn verbose(log: &Path) -> Vec<Case> {
    std::fs::read(log)
        .map(|b| junit::parse_verbose(&String::from_utf8_lossy(&b)))
        .unwrap_or_default()
}

/// The per-test differences, and the module's own when the LWK side did not finish while the
/// native side did. A test missing in the LWK because the module did not finish takes the
/// module's cause.
fn differences(cfg: &Config, m: &str, native: &PySide, lwk: &PySide) -> Vec<Difference> {
    let mut out = Vec::new();
    let mut module_cause: Option<Cause> = None;
    if native.complete() && !lwk.complete() {
        module_cause = cfg.limits.cause(Kind::Python, m);
        out.push(Difference {
            id: m.to_string(),
            native: Outcome::Passed,
            lwk: Outcome::Failed,
            detail: format!("the module did not finish in the LWK: {}", lwk.status),
            cause: module_cause.clone(),
        });
    }
    let mut ids: BTreeMap<&str, (Outcome, Outcome)> = BTreeMap::new();
    for c in &native.cases {
        ids.entry(&c.id).or_insert((Outcome::Missing, Outcome::Missing)).0 = c.outcome;
    }
    for c in &lwk.cases {
        ids.entry(&c.id).or_insert((Outcome::Missing, Outcome::Missing)).1 = c.outcome;
    }
    for (id, (n, l)) in ids {
        if n == l {
            continue;
        }
        let cause = cfg
            .limits
            .cause(Kind::Python, id)
            .or_else(|| (l == Outcome::Missing).then(|| module_cause.clone()).flatten());
        out.push(Difference {
            id: id.to_string(),
            native: n,
            lwk: l,
            detail: String::new(),
            cause,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::Limits;
    use std::path::PathBuf;
    use std::time::Duration;

    fn side(cases: &[(&str, Outcome)], complete: bool) -> PySide {
        let cases: Vec<Case> = cases
            .iter()
            .map(|(id, o)| Case {
                id: id.to_string(),
                outcome: *o,
            })
            .collect();
        PySide {
            run: cases.len(),
            passed: 0,
            failed: 0,
            skipped: 0,
            status: String::new(),
            source: if complete { "junit" } else { "verbose" },
            seconds: 0.0,
            leftover_files: 0,
            ran: Some(Ran {
                code: complete.then_some(0),
                signal: (!complete).then_some(9),
                timed_out: !complete,
                seconds: 0.0,
                leftovers: 0,
            }),
            cases,
        }
    }

    fn cfg(limits: &str) -> Config {
        Config {
            python: PathBuf::from("/usr/bin/python3.11"),
            stress_ng: PathBuf::from("stress-ng"),
            modules: vec![],
            ignore: vec![],
            stressors: vec![],
            stress_seconds: 2,
            module_timeout: Duration::from_secs(1),
            launcher: PathBuf::from("multios"),
            lwk_args: vec![],
            out_dir: None,
            limits: Limits::parse(limits, "t").expect("limits parse"),
        }
    }

    #[test]
    fn differences_take_causes_and_the_module_cause_covers_missing_tests() {
        let c = cfg("python t.a | lim-a | a's cause\npython test_m | lim-m | the module hangs\n");
        let n = side(
            &[
                ("t.a", Outcome::Passed),
                ("t.b", Outcome::Passed),
                ("t.c", Outcome::Skipped),
                ("t.d", Outcome::Passed),
            ],
            true,
        );
        let l = side(
            &[
                ("t.a", Outcome::Failed),
                ("t.c", Outcome::Passed),
                ("t.d", Outcome::Passed),
            ],
            false,
        );
        let d = differences(&c, "test_m", &n, &l);
        let got: Vec<(&str, Option<&str>)> = d
            .iter()
            .map(|d| (d.id.as_str(), d.cause.as_ref().map(|c| c.limit.as_str())))
            .collect();
        assert_eq!(
            got,
            [
                ("test_m", Some("lim-m")),
                ("t.a", Some("lim-a")),
                ("t.b", Some("lim-m")),
                ("t.c", None)
            ]
        );
        assert!(d[0].detail.contains("did not finish"), "{}", d[0].detail);
    }

    #[test]
    fn same_outcomes_no_difference() {
        let c = cfg("");
        let n = side(&[("t.a", Outcome::Failed), ("t.b", Outcome::Passed)], true);
        assert!(differences(&c, "test_m", &n, &n.clone()).is_empty());
    }
}
