//! Validation suites (issue #15): a TOML list of real programs with the inputs they need (generated
//! deterministically, [`inputs`]), set-up and clean-up commands, and checks of their output, run by
//! `multios validate --suite FILE` through [`crate::validate::real`]. The bundled suite
//! ([`BUNDLED`], `--suite bundled`) has real programs from Debian packages: compressors, a
//! database, interpreters, a parallel build, text tools, LAMMPS and HPC Challenge.
//!
//! ```toml
//! [[workload]]
//! name = "bzip2"
//! argv = ["bzip2", "-9", "-k", "-f", "input.txt"]
//! quick = true                      # part of --quick
//! prepare = "…"                     # shell, once, after the inputs are generated
//! setup = "…"                       # shell, before every run, in the run's copy
//! cleanup = "…"                     # shell, after every run
//! lwk_argv = ["mpirun", "-n", "2", "{multios}", "lwk", "run", "--policy", "{policy}", "--", "lmp"]
//!                                   # how to run it in the LWK, if not `multios lwk run -- ARGV`
//! startup_argv = ["perl", "-e", "1"] # its program doing nothing: the `startup-own` term's
//! stdin = "input.txt"               # a file of its directory every run reads on stdin
//! [[workload.input]]
//! file = "input.txt"
//! kind = "text"                     # text | random | content | hpccinf | cproject
//! mib = 4
//! [workload.check]                  # checked once, on a native run, before measuring
//! exit = 0
//! creates = ["input.txt.bz2"]
//! stdout_contains = "…"
//! ```

pub mod inputs;

use crate::validate::real::{self, Workload, WorkloadResult};
use crate::{ExperimentError, Progress};
use inputs::Input;
use std::path::{Path, PathBuf};

/// The bundled suite (`--suite bundled`).
pub const BUNDLED: &str = include_str!("../../data/suite.toml");

/// A suite file.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suite {
    #[serde(rename = "workload")]
    pub workloads: Vec<Entry>,
}

/// One workload of a suite.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub name: String,
    pub argv: Vec<String>,
    #[serde(default)]
    pub quick: bool,
    #[serde(default, rename = "input")]
    pub inputs: Vec<Input>,
    #[serde(default)]
    pub prepare: Option<String>,
    #[serde(default)]
    pub setup: Option<String>,
    #[serde(default)]
    pub cleanup: Option<String>,
    /// How to run it in the LWK, when not `multios lwk run --policy P -- ARGV` (`{multios}`,
    /// `{policy}` are replaced): MPI ranks each in an LWK under a Linux `mpirun`.
    #[serde(default)]
    pub lwk_argv: Option<Vec<String>>,
    /// The workload's program doing nothing (same binary and libraries, no work), for the
    /// `startup-own` term; run in a copy of the workload's directory.
    #[serde(default)]
    pub startup_argv: Option<Vec<String>>,
    /// `startup_argv` in the LWK when not `multios lwk run -- STARTUP_ARGV` (as `lwk_argv`).
    #[serde(default)]
    pub startup_lwk_argv: Option<Vec<String>>,
    /// A file of the workload's directory (an input or one `prepare` made) that every run reads
    /// on stdin, as `ARGV < FILE` would; without it the runs read `/dev/null`.
    #[serde(default)]
    pub stdin: Option<String>,
    #[serde(default)]
    pub check: Check,
}

/// What a native run of the workload must show before it is measured.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// Exit code (default 0): 0–255, what a process's exit status can be (checked at load time).
    #[serde(default)]
    pub exit: Option<i32>,
    /// Files the run creates in its directory.
    #[serde(default)]
    pub creates: Vec<String>,
    /// Text its stdout contains.
    #[serde(default)]
    pub stdout_contains: Option<String>,
}

/// What can go wrong reading or preparing a suite.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    #[error("{path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("{path}: {source}")]
    Parse { path: String, source: toml::de::Error },
    #[error("{path}: {why}")]
    Invalid { path: String, why: String },
    #[error("{path}: workload '{name}': {source}")]
    Input {
        path: String,
        name: String,
        source: inputs::InputError,
    },
    #[error("workload '{name}': its check failed: {why} (run `{cmd}` in a copy of {dir} to see why)")]
    Check {
        name: String,
        why: String,
        cmd: String,
        dir: String,
    },
}

impl Suite {
    /// Parses suite text; `path` names it in errors.
    pub fn parse(path: &str, text: &str) -> Result<Suite, SuiteError> {
        let s: Suite = toml::from_str(text).map_err(|source| SuiteError::Parse {
            path: path.into(),
            source,
        })?;
        let invalid = |why: String| SuiteError::Invalid {
            path: path.into(),
            why,
        };
        if s.workloads.is_empty() {
            return Err(invalid("no [[workload]]: add at least one".into()));
        }
        let mut names = std::collections::BTreeSet::new();
        for w in &s.workloads {
            if w.argv.is_empty() {
                return Err(invalid(format!("workload '{}': argv is empty", w.name)));
            }
            if w.name.is_empty()
                || !w
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            {
                return Err(invalid(format!(
                    "workload name '{}': use letters, digits, '-', '_' or '.'",
                    w.name
                )));
            }
            if w.stdin.as_deref().is_some_and(str::is_empty) {
                return Err(invalid(format!(
                    "workload '{}': stdin is empty: name a file of the workload's directory, or leave stdin out",
                    w.name
                )));
            }
            // A path that leaves the directory read (stdin) or found (creates) some other file:
            // `creates = ["/etc/passwd"]` always passed.
            if let Some(f) = w.stdin.as_deref().filter(|f| !inputs::inside_workload_dir(f)) {
                return Err(invalid(format!(
                    "workload '{}': stdin = \"{f}\": must be a relative path inside the workload's directory \
                     (a file an input or prepare makes there), without '..'",
                    w.name
                )));
            }
            if let Some(f) = w.check.creates.iter().find(|f| !inputs::inside_workload_dir(f)) {
                return Err(invalid(format!(
                    "workload '{}': [workload.check] creates = \"{f}\": must be a relative path inside the \
                     workload's directory (where the run's files are looked for), without '..'",
                    w.name
                )));
            }
            if let Some(x) = w.check.exit.filter(|x| !(0..=255).contains(x)) {
                return Err(invalid(format!(
                    "workload '{}': [workload.check] exit = {x}: an exit code is 0–255 (what a process's exit status can hold); give one in 0–255",
                    w.name
                )));
            }
            for i in &w.inputs {
                i.check().map_err(|source| SuiteError::Input {
                    path: path.into(),
                    name: w.name.clone(),
                    source,
                })?;
            }
            if !names.insert(&w.name) {
                return Err(invalid(format!("workload '{}' appears twice", w.name)));
            }
        }
        Ok(s)
    }

    /// Reads `FILE`, or the bundled suite for `bundled`.
    pub fn load(file: &Path) -> Result<Suite, SuiteError> {
        if file == Path::new("bundled") {
            return Suite::parse("bundled suite (crates/experiment/data/suite.toml)", BUNDLED);
        }
        let path = file.display().to_string();
        let text = multios_host::input::read_to_string_capped(file, MAX_SUITE_BYTES).map_err(|source| {
            SuiteError::Read {
                path: path.clone(),
                source,
            }
        })?;
        Suite::parse(&path, &text)
    }
}

/// The largest suite file read (a suite is a few KiB; `--suite /dev/zero` stops here).
pub const MAX_SUITE_BYTES: u64 = 16 << 20;

/// How to run a suite.
#[derive(Debug, Clone)]
pub struct Config {
    pub validate: real::Config,
    /// Only the workloads marked `quick`.
    pub quick: bool,
    /// Only these workloads (all when empty).
    pub only: Vec<String>,
    /// Where the inputs are generated (removed afterwards).
    pub dir: PathBuf,
}

/// The suite's outcome.
#[derive(Debug, serde::Serialize)]
pub struct Outcome {
    pub workloads: Vec<WorkloadResult>,
    /// The correction terms as their microbenchmarks measured them, per target.
    pub term_measurements: Vec<real::Measurement>,
    /// Workloads not run (a program missing, a failed check) and why.
    pub skipped: Vec<(String, String)>,
    pub overall: Vec<real::Accuracy>,
}

/// The first program of `argv` found on PATH (or given as a path).
fn on_path(prog: &str) -> bool {
    if prog.contains('/') {
        return Path::new(prog).is_file();
    }
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
}

/// Generates `e`'s inputs in `dir` and runs its `prepare`.
pub fn prepare(e: &Entry, dir: &Path, suite: &str) -> Result<(), SuiteError> {
    let input_err = |source| SuiteError::Input {
        path: suite.into(),
        name: e.name.clone(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(|source| {
        input_err(inputs::InputError::Io {
            path: dir.to_path_buf(),
            source,
        })
    })?;
    for i in &e.inputs {
        i.generate(dir).map_err(input_err)?;
    }
    if let Some(p) = &e.prepare {
        let st = std::process::Command::new("sh")
            .args(["-c", p])
            .current_dir(dir)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .status();
        if !st.as_ref().is_ok_and(|s| s.success()) {
            return Err(SuiteError::Check {
                name: e.name.clone(),
                why: format!("prepare '{p}' failed ({st:?})"),
                cmd: p.clone(),
                dir: dir.display().to_string(),
            });
        }
    }
    Ok(())
}

/// Runs `e` once natively in a copy of `dir` and applies its checks.
pub fn check(e: &Entry, dir: &Path) -> Result<(), SuiteError> {
    let fail = |why: String| SuiteError::Check {
        name: e.name.clone(),
        why,
        cmd: e.argv.join(" "),
        dir: dir.display().to_string(),
    };
    // Before the copy is made: an error here leaves nothing behind.
    let input = match &e.stdin {
        Some(f) => std::process::Stdio::from(std::fs::File::open(dir.join(f)).map_err(|x| {
            fail(format!(
                "stdin = \"{f}\": cannot open it in the workload's directory: {x}"
            ))
        })?),
        None => std::process::Stdio::null(),
    };
    let copy = dir.with_extension("check");
    std::fs::remove_dir_all(&copy).ok();
    crate::compare::capture::copy_tree(dir, &copy).map_err(|x| fail(x.to_string()))?;
    let run = |sh: &Option<String>| -> Result<(), SuiteError> {
        if let Some(c) = sh {
            crate::compare::capture::hook("setup/cleanup", c, Some(&copy), 0)
                .map_err(|x| fail(x.to_string()))?;
        }
        Ok(())
    };
    run(&e.setup)?;
    let out = std::process::Command::new(&e.argv[0])
        .args(&e.argv[1..])
        .current_dir(&copy)
        .stdin(input)
        .output()
        .map_err(|x| fail(format!("cannot start {}: {x}", e.argv[0])))?;
    let r = (|| {
        let want = e.check.exit.unwrap_or(0);
        if out.status.code() != Some(want) {
            return Err(fail(format!(
                "exited with {} (expected {want}); stderr: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        for f in &e.check.creates {
            if !copy.join(f).exists() {
                return Err(fail(format!("did not create {f}")));
            }
        }
        if let Some(t) = &e.check.stdout_contains {
            if !String::from_utf8_lossy(&out.stdout).contains(t.as_str()) {
                return Err(fail(format!("stdout does not contain '{t}'")));
            }
        }
        Ok(())
    })();
    run(&e.cleanup)?;
    std::fs::remove_dir_all(&copy).ok();
    r
}

/// Refuses an `--only` name that is not a workload of the suite: a typo silently ran fewer
/// workloads (or none).
fn check_only(cfg: &Config, suite: &Suite) -> Result<(), ExperimentError> {
    let unknown: Vec<&str> = cfg
        .only
        .iter()
        .filter(|n| !suite.workloads.iter().any(|w| &w.name == *n))
        .map(String::as_str)
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    let known: Vec<&str> = suite.workloads.iter().map(|w| w.name.as_str()).collect();
    Err(ExperimentError::Config(format!(
        "--only: no workload named {} in the suite; its workloads are {}",
        unknown
            .iter()
            .map(|n| format!("'{n}'"))
            .collect::<Vec<_>>()
            .join(", "),
        known.join(", ")
    )))
}

/// Runs the suite: per workload, inputs, check, then [`real::run_workload`]. A workload whose
/// program is missing or whose check fails is skipped with the reason (the others still run).
pub fn run(cfg: &Config, suite: &Suite, progress: &mut dyn Progress) -> Result<Outcome, ExperimentError> {
    check_only(cfg, suite)?;
    let chosen: Vec<&Entry> = suite
        .workloads
        .iter()
        .filter(|e| !cfg.quick || e.quick)
        .filter(|e| cfg.only.is_empty() || cfg.only.contains(&e.name))
        .collect();
    if chosen.is_empty() {
        return Err(ExperimentError::Config(
            "no workload of the suite is selected (--quick takes those with quick = true; --only names them)"
                .into(),
        ));
    }
    let v = &cfg.validate;
    let per = v.mechanisms.len() * v.fcs.len() * v.policies.len() + if v.lwk { v.policies.len() } else { 0 };
    progress.start(
        (per * chosen.len()) as u64,
        "validate: workloads × targets × policies × f_c",
    );
    let mut results = Vec::new();
    let mut skipped = Vec::new();
    let mut terms = real::micro::TermCache::default();
    for e in chosen {
        if !on_path(&e.argv[0]) {
            let why = format!(
                "{} is not installed (scripts/deps.sh installs the suite's packages)",
                e.argv[0]
            );
            progress.note(&format!("{}: skipped: {why}", e.name));
            skipped.push((e.name.clone(), why));
            continue;
        }
        let dir = cfg.dir.join(&e.name);
        let ready = prepare(e, &dir, "suite").and_then(|()| check(e, &dir));
        if let Err(x) = ready {
            progress.note(&format!("{}: skipped: {x}", e.name));
            skipped.push((e.name.clone(), x.to_string()));
            std::fs::remove_dir_all(&dir).ok();
            continue;
        }
        let w = Workload {
            name: e.name.clone(),
            argv: e.argv.iter().map(Into::into).collect(),
            workdir: Some(dir.clone()),
            exit: e.check.exit.unwrap_or(0),
            setup: e.setup.clone(),
            cleanup: e.cleanup.clone(),
            lwk_argv: e.lwk_argv.clone(),
            startup_argv: e.startup_argv.clone(),
            startup_lwk_argv: e.startup_lwk_argv.clone(),
            stdin: e.stdin.as_ref().map(|f| dir.join(f)),
        };
        let r = real::run_workload(v, &w, &mut terms, progress);
        std::fs::remove_dir_all(&dir).ok();
        match r {
            Ok(r) => results.push(r),
            Err(x) => {
                let why = crate::error_chain(&x);
                progress.note(&format!("{}: failed: {why}", e.name));
                skipped.push((e.name.clone(), why));
            }
        }
    }
    progress.finish();
    let overall = real::overall(&results)?;
    Ok(Outcome {
        workloads: results,
        term_measurements: terms.measurements,
        skipped,
        overall,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_15_the_bundled_suite_parses_and_has_twelve_real_programs() {
        let s = Suite::parse("bundled", BUNDLED).expect("the bundled suite parses");
        assert!(s.workloads.len() >= 12, "{}", s.workloads.len());
        let quick = s.workloads.iter().filter(|w| w.quick).count();
        assert!((2..=3).contains(&quick), "{quick} quick workloads");
    }

    #[test]
    fn issue_15_suite_errors_name_the_file_and_the_workload() {
        let e = Suite::parse("s.toml", "[[workload]]\nname = \"a\"\nargv = []\n")
            .expect_err("empty argv")
            .to_string();
        assert!(e.starts_with("s.toml") && e.contains("'a'"), "{e}");
        let e = Suite::parse(
            "s.toml",
            "[[workload]]\nname = \"a\"\nargv = [\"x\"]\nbogus = 1\n",
        )
        .expect_err("unknown field")
        .to_string();
        assert!(e.contains("bogus"), "{e}");
        let two = "[[workload]]\nname = \"a\"\nargv = [\"x\"]\n";
        let e = Suite::parse("s.toml", &format!("{two}{two}"))
            .expect_err("twice")
            .to_string();
        assert!(e.contains("twice"), "{e}");
        let e = Suite::parse(
            "s.toml",
            "[[workload]]\nname = \"a\"\nargv = [\"x\"]\nstdin = \"\"\n",
        )
        .expect_err("empty stdin")
        .to_string();
        assert!(e.contains("'a'") && e.contains("stdin"), "{e}");
    }

    /// `[workload.check] exit` out of 0–255 can never match a process's exit status: refused
    /// when the suite is loaded, naming the file, the workload and the field, not at run time.
    #[test]
    fn issue_16_suite_check_exit_outside_0_to_255_is_refused_at_load_time() {
        for bad in ["300", "-1", "256"] {
            let text =
                format!("[[workload]]\nname = \"a\"\nargv = [\"x\"]\n[workload.check]\nexit = {bad}\n");
            let e = Suite::parse("s.toml", &text).expect_err(bad).to_string();
            assert!(
                e.starts_with("s.toml")
                    && e.contains("'a'")
                    && e.contains("exit = ")
                    && e.contains(bad)
                    && e.contains("0–255"),
                "{e}"
            );
        }
        for good in ["0", "1", "255"] {
            let text =
                format!("[[workload]]\nname = \"a\"\nargv = [\"x\"]\n[workload.check]\nexit = {good}\n");
            let s = Suite::parse("s.toml", &text).expect(good);
            assert_eq!(
                s.workloads[0].check.exit.map(|x| x.to_string()).as_deref(),
                Some(good)
            );
        }
    }

    /// A suite's `stdin` is read by the check's run as `ARGV < FILE` would be (and named in the
    /// error when it is missing).
    #[test]
    fn issue_15_a_suite_workload_reads_its_stdin_file() {
        let dir = std::env::temp_dir().join(format!("multios-suite-stdin-{}", std::process::id()));
        let s = Suite::parse(
            "t",
            "[[workload]]\nname = \"wc\"\nargv = [\"wc\", \"-l\"]\nstdin = \"in.txt\"\n\
             [[workload.input]]\nfile = \"in.txt\"\nkind = \"content\"\ntext = \"a\\nb\\nc\\n\"\n\
             [workload.check]\nstdout_contains = \"3\"\n",
        )
        .expect("parses");
        let e = &s.workloads[0];
        assert_eq!(e.stdin.as_deref(), Some("in.txt"));
        prepare(e, &dir, "t").expect("prepared");
        check(e, &dir).expect("wc -l counts the 3 lines of its stdin");
        let mut missing = e.clone();
        missing.stdin = Some("nope.txt".into());
        let x = check(&missing, &dir).expect_err("no such file").to_string();
        assert!(x.contains("nope.txt"), "{x}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn issue_15_inputs_are_generated_and_checks_applied() {
        let dir = std::env::temp_dir().join(format!("multios-suite-test-{}", std::process::id()));
        let s = Suite::parse(
            "t",
            "[[workload]]\nname = \"wc\"\nargv = [\"wc\", \"-l\", \"in.txt\"]\n\
             [[workload.input]]\nfile = \"in.txt\"\nkind = \"content\"\ntext = \"a\\nb\\nc\\n\"\n\
             [workload.check]\nstdout_contains = \"3 in.txt\"\n",
        )
        .expect("parses");
        let e = &s.workloads[0];
        prepare(e, &dir, "t").expect("prepared");
        check(e, &dir).expect("the check passes");
        let mut bad = e.clone();
        bad.check.stdout_contains = Some("4 in.txt".into());
        let x = check(&bad, &dir).expect_err("the check fails").to_string();
        assert!(x.contains("'wc'") && x.contains("4 in.txt"), "{x}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
