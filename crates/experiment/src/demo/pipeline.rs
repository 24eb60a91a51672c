//! The demo's steps in order — profile (live, else the bundled profile), project, emulate (live
//! profiles only), plots — reporting each to a [`Steps`] as it completes, so the CLI prints as it
//! goes. A failed live profile or emulation becomes a note, not an error.

use super::{
    emulate, plots, profile_live, projection, workload_argv, Emulation, EmulationConfig, Projection, BUNDLED,
    EMULATED,
};
use crate::{setup, ExperimentError, Progress};
use multios_emulate::Mechanism;
use multios_model::Workload;
use multios_profile::Profile;
use std::path::{Path, PathBuf};

/// The demo's settings (the CLI's flags).
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the input, the profile, the projection table and the plots go.
    pub out: PathBuf,
    /// A profile to use instead of profiling the workload (skips the emulation step).
    pub profile: Option<PathBuf>,
    /// γ values to project at.
    pub gammas: Vec<f64>,
    /// One-way forwarding cost for the emulation step, as typed (`--fc`).
    pub fc: String,
    /// Emulation mechanism as typed (`--mechanism`: shm, proxy or migrate).
    pub mechanism: String,
    /// Input size in MiB.
    pub mib: usize,
    /// Rounds of paired native/emulated runs (ABBA order).
    pub rounds: usize,
}

/// Told of each step as it completes.
pub trait Steps {
    /// What the steps' own failures become (an [`ExperimentError`] converts into it).
    type Error: From<ExperimentError>;
    /// The progress display of the emulation rounds.
    fn progress(&mut self) -> &mut dyn Progress;
    /// Step 1: the profile (saved in the output directory), where it came from, and the notes so
    /// far (why live profiling was skipped).
    fn profiled(&mut self, profile: &Profile, source: &str, notes: &[String]) -> Result<(), Self::Error>;
    /// Step 2: the projection.
    fn projected(&mut self, projection: &Projection) -> Result<(), Self::Error>;
    /// Step 3: the emulation, measured.
    fn emulated(&mut self, emulation: &Emulation) -> Result<(), Self::Error>;
    /// Step 3 could not run; `why` is the error's chain on one line.
    fn emulation_skipped(&mut self, why: &str);
}

/// Everything the demo produced (its JSON fields).
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Where the profile came from.
    pub source: String,
    pub profile_file: PathBuf,
    pub projection: Projection,
    /// One entry per emulated policy (empty when the step did not run).
    pub emulation: Vec<serde_json::Value>,
    pub plots: Vec<multios_plot::Written>,
    /// The HTML report (`report.html` in the output directory).
    pub report: PathBuf,
    pub notes: Vec<String>,
}

/// Runs the demo's steps in order, telling `steps` of each.
pub fn run<S: Steps>(cfg: &Config, steps: &mut S) -> Result<Outcome, S::Error> {
    std::fs::create_dir_all(&cfg.out)
        .map_err(|e| ExperimentError::Run(format!("cannot create {}: {e}", cfg.out.display())))?;
    let mut notes = Vec::new();
    // 1. profile
    let input = cfg.out.join("input.txt");
    let argv = workload_argv(&input);
    let (profile, source, live) = match &cfg.profile {
        Some(p) => (
            multios_profile::load(p).map_err(ExperimentError::from)?,
            p.display().to_string(),
            false,
        ),
        None => match profile_live(&input, cfg.mib, &argv) {
            Ok(p) => (p, format!("live: multios profile -- {}", argv.join(" ")), true),
            Err(e) => {
                notes.push(format!(
                    "live profiling skipped ({}); using the bundled strace profile",
                    crate::error_chain(&e)
                ));
                let p = multios_profile::from_json_str("bundled examples/bzip2/profile.json", BUNDLED)
                    .map_err(ExperimentError::from)?;
                (
                    p,
                    "bundled bzip2 profile (examples/bzip2, strace -c -w -f)".to_string(),
                    false,
                )
            }
        },
    };
    let profile_file = cfg.out.join("profile.json");
    multios_profile::save(&profile, &profile_file).map_err(ExperimentError::from)?;
    steps.profiled(&profile, &source, &notes)?;
    // 2. project
    let w = Workload::from_profile(&profile);
    let proj = projection(&w, &cfg.gammas)?;
    steps.projected(&proj)?;
    // 3. emulate
    let emulation = if live {
        match emulate_step(cfg, &argv, &profile_file, &w, steps.progress()) {
            Ok(e) => {
                steps.emulated(&e)?;
                e.json
            }
            Err(e) => {
                let e = crate::error_chain(&e);
                notes.push(format!("emulation skipped: {e}"));
                steps.emulation_skipped(&e);
                Vec::new()
            }
        }
    } else {
        Vec::new()
    };
    // 4. plots
    let label = profile.program().unwrap_or_default().to_string();
    let written = plots(label, w, &cfg.out)?;
    // 5. the report: one offline HTML page of all the above (issue #18)
    let report = cfg.out.join("report.html");
    let mut inp = multios_report::Inputs::new(
        profile.clone(),
        &profile_file.display().to_string(),
        &format!("multios demo --out {}", cfg.out.display()),
    );
    if !emulation.is_empty() {
        inp.results.push((
            "demo emulation".into(),
            multios_report::demo_emulation(&emulation),
        ));
    }
    multios_report::write(&inp, &report)
        .map_err(|e| ExperimentError::Run(format!("report {}: {e}", report.display())))?;
    let _ = std::fs::remove_file(&input);
    let _ = std::fs::remove_file(input.with_extension("txt.bz2"));
    Ok(Outcome {
        source,
        profile_file,
        projection: proj,
        emulation,
        plots: written,
        report,
        notes,
    })
}

/// The mechanism a `--mechanism` text names.
pub fn mechanism(text: &str) -> Result<Mechanism, ExperimentError> {
    match text {
        "shm" => Ok(Mechanism::Shm),
        "proxy" => Ok(Mechanism::Proxy),
        "migrate" => Ok(Mechanism::Migrate),
        m => Err(ExperimentError::Config(format!(
            "--mechanism '{m}': use shm, proxy or migrate"
        ))),
    }
}

/// The emulation step: the policies of [`EMULATED`] resolved against the profile just written,
/// the cost and the default CPUs, then [`emulate`].
fn emulate_step(
    cfg: &Config,
    argv: &[String],
    profile: &Path,
    w: &Workload,
    progress: &mut dyn Progress,
) -> Result<Emulation, ExperimentError> {
    let mechanism = mechanism(&cfg.mechanism)?;
    let (compute, control) = setup::cpu_split(None, None)?;
    let cost = setup::cost_model(&cfg.fc, &[])?;
    let policies = EMULATED
        .iter()
        .map(|pol| Ok((pol.to_string(), setup::resolve_delegation(pol, Some(profile))?)))
        .collect::<Result<Vec<_>, ExperimentError>>()?;
    let e = EmulationConfig {
        mechanism,
        cost,
        policies,
        compute,
        control,
        argv: argv.to_vec(),
        rounds: cfg.rounds.max(1),
    };
    emulate(&e, w, progress)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Record {
        seen: Vec<String>,
        silent: crate::Silent,
    }

    impl Steps for Record {
        type Error = ExperimentError;
        fn progress(&mut self) -> &mut dyn Progress {
            &mut self.silent
        }
        fn profiled(&mut self, _: &Profile, source: &str, _: &[String]) -> Result<(), ExperimentError> {
            self.seen.push(format!("profiled {source}"));
            Ok(())
        }
        fn projected(&mut self, p: &Projection) -> Result<(), ExperimentError> {
            self.seen.push(format!("projected {}", p.rows.len()));
            Ok(())
        }
        fn emulated(&mut self, _: &Emulation) -> Result<(), ExperimentError> {
            self.seen.push("emulated".into());
            Ok(())
        }
        fn emulation_skipped(&mut self, why: &str) {
            self.seen.push(format!("skipped {why}"));
        }
    }

    #[test]
    fn issue_17_mechanisms_are_named_or_refused_naming_the_flag() {
        assert_eq!(mechanism("proxy").expect("proxy"), Mechanism::Proxy);
        let e = mechanism("fast").expect_err("unknown");
        assert_eq!(e.to_string(), "--mechanism 'fast': use shm, proxy or migrate");
    }

    #[test]
    fn issue_17_a_given_profile_is_projected_and_plotted_without_emulation() {
        let dir = std::env::temp_dir().join(format!("multios-demo-pipeline-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let given = dir.join("given.json");
        std::fs::write(&given, BUNDLED).expect("write the bundled profile");
        let cfg = Config {
            out: dir.join("out"),
            profile: Some(given.clone()),
            gammas: vec![2.0],
            fc: "10us".into(),
            mechanism: "shm".into(),
            mib: 1,
            rounds: 1,
        };
        let mut r = Record::default();
        let o = run(&cfg, &mut r).expect("the demo runs");
        assert_eq!(
            r.seen,
            [format!("profiled {}", given.display()), "projected 6".to_string()]
        );
        assert!(o.emulation.is_empty() && o.notes.is_empty());
        assert!(cfg.out.join("profile.json").is_file());
        assert!(!o.plots.is_empty());
        std::fs::remove_dir_all(&dir).ok();
    }
}
