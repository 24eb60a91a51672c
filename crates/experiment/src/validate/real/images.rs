//! The `images` term's microbenchmark (issue #15): what starting an image costs the LWK more than
//! natively, by its size — measured in the same minutes as the workload, never fitted to it.
//!
//! Five generated programs that do nothing (each exits at once), natively on the compute CPUs and
//! in `multios lwk run --policy all`, [`IMAGE_PAIRS`] pairs each in ABBA order, the median paired
//! difference:
//! - `static`: a static program of a few bytes;
//! - `static+text`: the same with [`IMAGES_MIB`] MiB more executable text;
//! - `static+data`: the same with [`IMAGES_MIB`] MiB more initialised data (loaded, not executable);
//! - `dynamic`: a dynamically linked program (ld.so, libc and a small library of its own);
//! - `dynamic+library`: the same with its library [`IMAGES_MIB`] MiB of text larger;
//! - `spawn×0` and `spawn×N`: a launcher that forks N = [`SPAWNS`] times, each child exec'ing the
//!   `dynamic` image, and waits for each (0 forks, then N): how a process forked inside the target
//!   starts (the LWK forks its VMM and makes the child a VM of its own).
//!
//! The price T = a + b·L + c·X + d·X_lib ([`multios_model::ImagePrice`]) follows from their
//! differences ([`fit`]): b from the data, c from the text (less its loaded bytes' b), d from the
//! library, and a from `dynamic` (what a dynamically linked program's start-up costs beyond its
//! bytes — the processes a workload execs are), and e (the fork path's extra per child over a fresh
//! start, [`fit_spawn`]) from the launcher's rows less `dynamic`'s. Real images (`true`, busybox, `cc1 --version`,
//! where installed) are measured beside them as checks: their rows say what the price projects
//! for them and what they cost. L and X are the program's and its interpreter's loaded and
//! executable bytes (ELF program headers), X_lib its libraries' text (`ldd`).

use super::{lwk_pairs, Config, Workload};
use crate::ExperimentError;
use multios_model::{ImageBytes, ImagePrice, Images, Terms};
use multios_profile::Profile;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The size added to the text, the data and the library (MiB).
pub const IMAGES_MIB: u64 = 16;
/// Pairs per image.
pub const IMAGE_PAIRS: usize = 8;
/// Children the launcher forks in its `spawn×N` row.
pub const SPAWNS: usize = 8;

/// The launcher: `img-spawner N PROG ARGS…` forks N times, each child exec'ing PROG, and waits
/// for each; any child that fails fails it.
const SPAWNER_C: &str = r#"#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc < 3)
        return 2;
    int n = atoi(argv[1]);
    for (int i = 0; i < n; i++) {
        pid_t p = fork();
        if (p == 0) {
            execv(argv[2], argv + 2);
            _exit(127);
        }
        int st;
        if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            return 1;
    }
    return 0;
}
"#;

/// One image started natively and in the LWK.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ImageRun {
    pub name: String,
    pub argv: Vec<String>,
    pub bytes: ImageBytes,
    /// Medians of the native and the LWK runs, and of the paired differences (seconds).
    pub native_s: f64,
    pub lwk_s: f64,
    pub extra_s: f64,
    /// What the price projects for it (filled after the fit).
    pub priced_s: f64,
    /// Part of the fit (the generated images), or a check (a real program).
    pub fitted: bool,
}

/// The microbenchmark's rows and the price fitted from them.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Calibration {
    pub runs: Vec<ImageRun>,
    pub price: ImagePrice,
    pub notes: Vec<String>,
}

fn run_err(what: &str, e: impl std::fmt::Display) -> ExperimentError {
    ExperimentError::Run(format!("the images microbenchmark: {what}: {e}"))
}

/// Runs `program args` to completion; its stdout.
fn tool(program: &str, args: &[&str], dir: &Path) -> Result<String, ExperimentError> {
    let o = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| run_err(&format!("running {program} (apt-get install build-essential)"), e))?;
    if !o.status.success() {
        return Err(run_err(
            &format!("{program} {}", args.join(" ")),
            String::from_utf8_lossy(&o.stderr).trim(),
        ));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// Marks an assembler source's stack not executable (else ld warns, and the program's stack is).
const NO_EXEC_STACK: &str = "\t.section .note.GNU-stack,\"\",@progbits\n";

/// A static program that exits, with `text` and `data` bytes added.
fn static_source(text: u64, data: u64) -> String {
    format!(
        "\t.globl _start\n\t.text\n_start:\n\tmov $60, %eax\n\txor %edi, %edi\n\tsyscall\n\t.fill {text}, 1, 0x90\n\t.data\n\t.long 1\n\t.fill {data}, 1, 1\n{NO_EXEC_STACK}"
    )
}

/// A library with one function and `text` bytes of code added.
fn library_source(text: u64) -> String {
    format!("\t.text\n\t.globl img_fn\n\t.type img_fn, @function\nimg_fn:\n\tret\n\t.fill {text}, 1, 0x90\n{NO_EXEC_STACK}")
}

const MAIN_C: &str = "void img_fn(void);\nint main(void) { img_fn(); return 0; }\n";

/// Builds the five generated images in `dir`: (name, path).
fn build(dir: &Path) -> Result<Vec<(&'static str, PathBuf)>, ExperimentError> {
    std::fs::create_dir_all(dir).map_err(ExperimentError::io(format!("creating {}", dir.display())))?;
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).map_err(ExperimentError::io(format!("writing {}", p.display())))
    };
    let mib = IMAGES_MIB << 20;
    let mut out = Vec::new();
    for (name, text, data) in [("static", 0, 0), ("static+text", mib, 0), ("static+data", 0, mib)] {
        let file = format!("img-{}", name.replace('+', "-"));
        write(&format!("{file}.S"), &static_source(text, data))?;
        tool(
            "gcc",
            &["-nostdlib", "-static", "-o", &file, &format!("{file}.S")],
            dir,
        )?;
        out.push((name, dir.join(file)));
    }
    write("main.c", MAIN_C)?;
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    for (name, lib, text) in [("dynamic", "imgsmall", 0), ("dynamic+library", "imgbig", mib)] {
        write(&format!("{lib}.S"), &library_source(text))?;
        tool(
            "gcc",
            &["-shared", "-o", &format!("lib{lib}.so"), &format!("{lib}.S")],
            dir,
        )?;
        let file = format!("img-{lib}");
        tool(
            "gcc",
            &["-O2", "-o", &file, "main.c", "-L.", &format!("-l{lib}"), &rpath],
            dir,
        )?;
        out.push((name, dir.join(file)));
    }
    write("spawner.c", SPAWNER_C)?;
    tool("gcc", &["-O2", "-o", "img-spawner", "spawner.c"], dir)?;
    out.push(("spawner", dir.join("img-spawner")));
    Ok(out)
}

/// The executable bytes of the libraries `exe` loads (`ldd`'s list, each file's PF_X segments).
fn library_bytes(exe: &Path) -> Result<f64, ExperimentError> {
    let text = tool("ldd", &[&exe.display().to_string()], Path::new("/"))?;
    let mut sum = 0.0;
    for line in text.lines() {
        let Some((_, rest)) = line.split_once("=> ") else {
            continue;
        };
        let path = rest.split(" (").next().unwrap_or("").trim();
        if path.starts_with('/') {
            let (s, _) =
                multios_profiler::elf_sizes(Path::new(path)).map_err(|e| run_err("ldd's library", e))?;
            sum += s.exec_bytes as f64;
        }
    }
    Ok(sum)
}

/// L, X of `exe` and its interpreter, and X_lib of its libraries — what the profile records for
/// a process that execs it.
pub fn image_bytes(exe: &Path) -> Result<ImageBytes, ExperimentError> {
    let (s, interp) = multios_profiler::elf_sizes(exe).map_err(|e| run_err("reading an image", e))?;
    let mut b = ImageBytes {
        loaded: s.loaded_bytes as f64,
        exec: s.exec_bytes as f64,
        libraries: 0.0,
    };
    if let Some(i) = interp {
        let (si, _) =
            multios_profiler::elf_sizes(Path::new(&i)).map_err(|e| run_err("reading an interpreter", e))?;
        b.loaded += si.loaded_bytes as f64;
        b.exec += si.exec_bytes as f64;
        b.libraries = library_bytes(exe)?;
    }
    Ok(b)
}

/// `argv` natively and in the LWK, [`IMAGE_PAIRS`] pairs: its row (priced later).
fn measure(
    cfg: &Config,
    name: &str,
    argv: Vec<String>,
    bytes: ImageBytes,
    fitted: bool,
    scratch: &Path,
) -> Result<ImageRun, ExperimentError> {
    let c = Config {
        pairs: IMAGE_PAIRS,
        ..cfg.clone()
    };
    let w = Workload::command(&format!("image-{name}"), argv.clone());
    let (native, lwk, invalid) = lwk_pairs(&c, &w, "all", scratch)?;
    if let Some(why) = invalid {
        return Err(run_err(&format!("image {name}"), why));
    }
    let n = native.len().min(lwk.len());
    let med = |v: &[f64]| crate::stats::median(v).unwrap_or(f64::NAN);
    Ok(ImageRun {
        name: name.to_string(),
        argv,
        bytes,
        native_s: med(&native[..n]),
        lwk_s: med(&lwk[..n]),
        extra_s: crate::stats::paired_diff(&native[..n], &lwk[..n]).map_or(f64::NAN, |p| p.median),
        priced_s: f64::NAN,
        fitted,
    })
}

/// The real programs measured as checks, where installed: (name, argv).
fn checks() -> Vec<(&'static str, Vec<String>)> {
    let mut v = vec![("true", vec!["true".to_string()])];
    if multios_profiler::resolve("busybox").is_ok() {
        v.push(("busybox", vec!["busybox".into(), "true".into()]));
    }
    let cc1 = Command::new("gcc")
        .arg("-print-prog-name=cc1")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|p| p.starts_with('/') && Path::new(p).is_file());
    if let Some(p) = cc1 {
        v.push(("cc1 --version", vec![p, "--version".into()]));
    }
    v
}

/// The price from the generated rows (by name; module docs): each slope at least 0 (a larger
/// image never starts faster; a negative difference is noise), with a note when one was cut.
pub fn fit(runs: &[ImageRun]) -> Result<(ImagePrice, Vec<String>), ExperimentError> {
    let row = |name: &str| {
        runs.iter()
            .find(|r| r.name == name)
            .ok_or_else(|| run_err("fitting", format!("no '{name}' row")))
    };
    let (base, text, data, dynamic, lib) = (
        row("static")?,
        row("static+text")?,
        row("static+data")?,
        row("dynamic")?,
        row("dynamic+library")?,
    );
    let mut notes = Vec::new();
    let mut slope = |what: &str, rise: f64, run: f64| {
        let s = rise / run;
        if s.is_finite() && s >= 0.0 {
            s
        } else {
            notes.push(format!(
                "images: the {what} slope came out {:.3} ms/MiB; taken as 0",
                s * 1048576e3
            ));
            0.0
        }
    };
    let b = slope(
        "per loaded byte",
        data.extra_s - base.extra_s,
        data.bytes.loaded - base.bytes.loaded,
    );
    let c = slope(
        "per executable byte",
        text.extra_s - base.extra_s - b * (text.bytes.loaded - base.bytes.loaded),
        text.bytes.exec - base.bytes.exec,
    );
    let d = slope(
        "per library byte",
        lib.extra_s
            - dynamic.extra_s
            - b * (lib.bytes.loaded - dynamic.bytes.loaded)
            - c * (lib.bytes.exec - dynamic.bytes.exec),
        lib.bytes.libraries - dynamic.bytes.libraries,
    );
    let a = dynamic.extra_s - b * dynamic.bytes.loaded - c * dynamic.bytes.exec - d * dynamic.bytes.libraries;
    Ok((
        ImagePrice {
            fixed_s: a,
            per_loaded_byte_s: b,
            per_exec_byte_s: c,
            per_library_byte_s: d,
            spawn_s: 0.0,
        },
        notes,
    ))
}

/// e: the launcher's extra per child (its `spawn×N` row less its `spawn×0` row, over N) less the
/// `dynamic` image's fresh-start extra, at least 0 (a note when the difference came out negative:
/// noise). Rows found by name.
pub fn fit_spawn(runs: &[ImageRun]) -> Result<(f64, Vec<String>), ExperimentError> {
    let row = |name: &str| {
        runs.iter()
            .find(|r| r.name == name)
            .ok_or_else(|| run_err("fitting the fork path", format!("no '{name}' row")))
    };
    let (none, many, dynamic) = (row("spawn×0")?, row(&format!("spawn×{SPAWNS}"))?, row("dynamic")?);
    let per_child = (many.extra_s - none.extra_s) / SPAWNS as f64;
    let e = per_child - dynamic.extra_s;
    if e.is_finite() && e >= 0.0 {
        Ok((e, Vec::new()))
    } else {
        Ok((
            0.0,
            vec![format!(
                "images: a forked child cost {:.2} ms more than natively, the dynamic image's fresh start {:.2} ms: the fork path's extra taken as 0",
                per_child * 1e3,
                dynamic.extra_s * 1e3
            )],
        ))
    }
}

/// The microbenchmark: builds the generated images under `scratch`, measures them and the checks,
/// fits the price and prices every row.
pub fn calibrate(cfg: &Config, scratch: &Path) -> Result<Calibration, ExperimentError> {
    let dir = scratch.join("images");
    let mut runs = Vec::new();
    let built = build(&dir)?;
    let path_of = |name: &str| {
        built
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, p)| p.display().to_string())
            .ok_or_else(|| run_err("building", format!("no '{name}' image")))
    };
    let (spawner, dynamic) = (path_of("spawner")?, path_of("dynamic")?);
    for (name, exe) in &built {
        if *name == "spawner" {
            continue;
        }
        let bytes = image_bytes(exe)?;
        runs.push(measure(
            cfg,
            name,
            vec![exe.display().to_string()],
            bytes,
            true,
            scratch,
        )?);
    }
    let spawner_bytes = image_bytes(Path::new(&spawner))?;
    for n in [0, SPAWNS] {
        let argv = vec![spawner.clone(), n.to_string(), dynamic.clone()];
        runs.push(measure(
            cfg,
            &format!("spawn×{n}"),
            argv,
            spawner_bytes,
            true,
            scratch,
        )?);
    }
    for (name, argv) in checks() {
        let exe = multios_profiler::resolve(&argv[0]).map_err(|e| run_err(name, e))?;
        let bytes = image_bytes(&exe)?;
        runs.push(measure(cfg, name, argv, bytes, false, scratch)?);
    }
    let (mut price, mut notes) = fit(&runs)?;
    let (spawn_s, spawn_notes) = fit_spawn(&runs)?;
    price.spawn_s = spawn_s;
    notes.extend(spawn_notes);
    let priced = |bytes: ImageBytes, spawned: bool| {
        Images {
            price,
            bytes: Some(bytes),
            spawned,
        }
        .seconds()
        .unwrap_or(f64::NAN)
    };
    let dynamic_bytes = runs
        .iter()
        .find(|r| r.name == "dynamic")
        .map(|r| r.bytes)
        .unwrap_or_default();
    for r in &mut runs {
        // The launcher's rows: its own start-up and its children's, each started the fork's way.
        let children = match r.name.strip_prefix("spawn×") {
            Some(n) => n.parse::<f64>().unwrap_or(0.0),
            None => 0.0,
        };
        r.priced_s = priced(r.bytes, false) + children * priced(dynamic_bytes, true);
    }
    Ok(Calibration { runs, price, notes })
}

/// With `images` on: the bytes of the workload's own (root) process from its profile
/// (`processes[].images`, schema 5), for the one projection of the summed profile; with `procs`
/// each process's own are taken from the tree. A note when the profile has none (not the eBPF
/// profiler, or the sizes unknown): `startup`'s empty program then stands.
pub fn fill_terms(terms: &mut Terms, prof: &Profile, notes: &mut Vec<String>) {
    let Some(im) = terms.images.as_mut() else {
        return;
    };
    let root = prof.processes.iter().find(|q| q.ppid.is_none());
    im.bytes = root.and_then(ImageBytes::of_process);
    if im.bytes.is_none() {
        let note = "images: the profile records no image sizes for the workload's process (schema 5, eBPF with --per-process): `startup`'s stands".to_string();
        if !notes.contains(&note) {
            notes.push(note);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, loaded_mib: f64, exec_mib: f64, lib_mib: f64, extra_ms: f64) -> ImageRun {
        let m = 1048576.0;
        ImageRun {
            name: name.into(),
            argv: Vec::new(),
            bytes: ImageBytes {
                loaded: loaded_mib * m,
                exec: exec_mib * m,
                libraries: lib_mib * m,
            },
            native_s: 1e-3,
            lwk_s: 1e-3 + extra_ms * 1e-3,
            extra_s: extra_ms * 1e-3,
            priced_s: f64::NAN,
            fitted: true,
        }
    }

    /// Rows made from a = 5 ms (dynamic), b = 1 ms/MiB, c = 0.9 ms/MiB, d = 0.6 ms/MiB, and a
    /// static program's own 2 ms: the fit gives the four back.
    #[test]
    fn issue_15_the_image_price_comes_back_from_the_generated_rows() {
        let (a, b, c, d, st) = (5.0, 1.0, 0.9, 0.6, 2.0);
        let at = |l: f64, x: f64, lib: f64, fixed: f64| fixed + b * l + c * x + d * lib;
        let runs = vec![
            row("static", 0.01, 0.0, 0.0, at(0.01, 0.0, 0.0, st)),
            row("static+text", 16.01, 16.0, 0.0, at(16.01, 16.0, 0.0, st)),
            row("static+data", 16.01, 0.0, 0.0, at(16.01, 0.0, 0.0, st)),
            row("dynamic", 0.3, 0.2, 1.5, at(0.3, 0.2, 1.5, a)),
            row("dynamic+library", 0.3, 0.2, 17.5, at(0.3, 0.2, 17.5, a)),
        ];
        let (p, notes) = fit(&runs).expect("fits");
        let per_mib = |s: f64| s * 1048576.0 * 1e3;
        assert!((p.fixed_s * 1e3 - a).abs() < 1e-9, "{p:?}");
        assert!((per_mib(p.per_loaded_byte_s) - b).abs() < 1e-9, "{p:?}");
        assert!((per_mib(p.per_exec_byte_s) - c).abs() < 1e-9, "{p:?}");
        assert!((per_mib(p.per_library_byte_s) - d).abs() < 1e-9, "{p:?}");
        assert!(notes.is_empty(), "{notes:?}");
        // A library that started faster than the small one (noise): no negative price, a note.
        let mut noisy = runs.clone();
        noisy[4].extra_s = noisy[3].extra_s - 1e-3;
        let (p, notes) = fit(&noisy).expect("fits");
        assert_eq!(p.per_library_byte_s, 0.0);
        assert!(notes.iter().any(|n| n.contains("library")), "{notes:?}");
        // A missing row is named.
        let e = fit(&runs[..4]).expect_err("no library row").to_string();
        assert!(e.contains("dynamic+library"), "{e}");
    }

    /// The launcher's rows: 3 ms of its own, each child 5 ms (`dynamic`'s fresh start) + 20 ms
    /// (the fork path): e = 20 ms. A child cheaper than a fresh start (noise) gives 0 and a note.
    #[test]
    fn issue_15_the_fork_path_s_extra_is_a_child_s_cost_less_a_fresh_start() {
        let n = SPAWNS as f64;
        let runs = vec![
            row("dynamic", 0.3, 0.2, 1.5, 5.0),
            row("spawn×0", 0.3, 0.2, 1.5, 3.0),
            row(&format!("spawn×{SPAWNS}"), 0.3, 0.2, 1.5, 3.0 + n * 25.0),
        ];
        let (e, notes) = fit_spawn(&runs).expect("fits");
        assert!((e - 0.020).abs() < 1e-12, "{e}");
        assert!(notes.is_empty());
        let mut noisy = runs.clone();
        noisy[2].extra_s = (3.0 + n * 4.0) * 1e-3;
        let (e, notes) = fit_spawn(&noisy).expect("fits");
        assert_eq!(e, 0.0);
        assert!(notes.iter().any(|n| n.contains("fork path")), "{notes:?}");
        assert!(fit_spawn(&runs[..2])
            .expect_err("no spawn×N row")
            .to_string()
            .contains("spawn×"));
    }

    #[test]
    fn issue_15_the_generated_sources_ask_for_their_sizes() {
        let s = static_source(1 << 20, 2 << 20);
        assert!(
            s.contains(".fill 1048576, 1, 0x90") && s.contains(".fill 2097152, 1, 1"),
            "{s}"
        );
        assert!(library_source(5).contains(".fill 5, 1, 0x90"));
    }
}
