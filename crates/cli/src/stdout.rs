//! Writing results to stdout. `println!` panics when stdout is a pipe whose reader has gone
//! (`multios … --json | head -1`); these macros end the process quietly instead, with status 0,
//! as ripgrep does. (SIGPIPE stays ignored: the emulator's delegates and the LWK's proxy write on the
//! guest's behalf and must get EPIPE, not die.)

//!
//! `eprintln!` and `eprint!` panic too, when stderr cannot be written (`multios plot … 2>/dev/full`
//! ended with status 101). This module, declared first with `#[macro_use]`, defines its own two,
//! which shadow std's in the whole crate: a message that cannot be shown is dropped.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// Writes `args` to stderr, ignoring a write error (a full or closed stderr).
pub fn ewrite(args: std::fmt::Arguments) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// std's `eprint!` without its panic when stderr cannot be written (see the module comment).
macro_rules! eprint {
    ($($t:tt)*) => {
        $crate::stdout::ewrite(format_args!($($t)*))
    };
}

/// std's `eprintln!` without its panic when stderr cannot be written (see the module comment).
macro_rules! eprintln {
    () => {
        $crate::stdout::ewrite(format_args!("\n"))
    };
    ($($t:tt)*) => {
        $crate::stdout::ewrite(format_args!("{}\n", format_args!($($t)*)))
    };
}

/// `--results FILE`: where multios's own output goes instead of stdout, which then stays the
/// program's alone (`multios --json --results r.json emulate … -- prog > prog.out`).
static RESULTS: OnceLock<Results> = OnceLock::new();
/// The results file, opened at the first write. Not before: during `lwk run` the VMM's process
/// is the guest's, and a descriptor opened at start-up would sit among the guest's numbers.
static RESULTS_FILE: Mutex<Option<std::fs::File>> = Mutex::new(None);

/// The `--results` file and the temporary file beside it that collects the output until the run
/// ends: FILE itself is replaced only then, so it may also be one of the run's inputs
/// (`--results p.json model naive --profile p.json`), and a failed run leaves it as it was. A FILE
/// that exists and is not a regular file (`/dev/stderr`, a FIFO) is written directly.
struct Results {
    /// FILE as given, for messages.
    path: PathBuf,
    /// Where the output is written: the temporary file, or FILE itself when it is a device or pipe.
    write: PathBuf,
    /// What the temporary file replaces at the end (FILE, or the file a symbolic link FILE names);
    /// `None` when FILE is written directly.
    target: Option<PathBuf>,
    /// Whether the run's end has been dealt with.
    done: Mutex<bool>,
}

/// The temporary file beside `path`: hidden, and named by this process so that two runs writing
/// the same FILE do not share it.
fn temp_beside(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "results".into());
    path.with_file_name(format!(".{name}.multios-{}.tmp", std::process::id()))
}

/// Sends every later write to `path` instead of stdout. The temporary file beside it is created
/// now, so that a directory that cannot be written is refused before any work, and closed again
/// at once; [`finish`] puts it in place of `path`.
pub fn results_to(given: &Path) -> Result<(), String> {
    let err = |why: String| format!("--results {}: {why}", given.display());
    // Absolute from now on: `lwk run`'s guest changes the process's working directory, and the
    // file is written and put in place after it did (issue #16).
    let path = &std::path::absolute(given).map_err(|e| err(format!("cannot resolve it: {e}")))?;
    if path.is_dir() {
        return Err(err("it is a directory, name a file".into()));
    }
    let r = match std::fs::metadata(path) {
        // A device or a pipe: written directly, as it cannot be replaced.
        Ok(m) if !m.is_file() => {
            std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(|e| err(format!("cannot open it: {e}")))?;
            Results {
                path: given.to_path_buf(),
                write: path.to_path_buf(),
                target: None,
                done: Mutex::new(false),
            }
        }
        m => {
            // A symbolic link stays one: the file it names is replaced.
            let target = match (m, std::fs::symlink_metadata(path)) {
                (Ok(_), Ok(l)) if l.file_type().is_symlink() => {
                    std::fs::canonicalize(path).map_err(|e| err(format!("cannot resolve it: {e}")))?
                }
                _ => path.to_path_buf(),
            };
            if target.file_name().is_none() {
                return Err(err("name a file".into()));
            }
            let tmp = temp_beside(&target);
            std::fs::File::create(&tmp).map_err(|e| err(format!("cannot create it: {e}")))?;
            Results {
                path: given.to_path_buf(),
                write: tmp,
                target: Some(target),
                done: Mutex::new(false),
            }
        }
    };
    let tmp = r.target.is_some().then(|| r.write.clone());
    RESULTS.set(r).map_err(|_| {
        if let Some(t) = tmp {
            let _ = std::fs::remove_file(t);
        }
        "--results given twice".to_string()
    })
}

/// Whether multios's own output goes to a `--results` file.
pub fn to_file() -> bool {
    RESULTS.get().is_some()
}

/// Ends the `--results` file, once: after a run that succeeded (`ok`) the temporary file replaces
/// FILE; after one that failed it is removed and FILE is left as it was. Without `--results`, or
/// when called again, nothing happens.
pub fn finish(ok: bool) -> Result<(), String> {
    let Some(r) = RESULTS.get() else {
        return Ok(());
    };
    let mut done = r.done.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if std::mem::replace(&mut *done, true) {
        return Ok(());
    }
    let file = RESULTS_FILE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    let Some(target) = &r.target else {
        return Ok(());
    };
    let fail = |what: &str, e: std::io::Error| {
        let _ = std::fs::remove_file(&r.write);
        format!("--results {}: cannot {what}: {e}", r.path.display())
    };
    if !ok {
        let _ = std::fs::remove_file(&r.write);
        return Ok(());
    }
    if let Some(f) = file {
        f.sync_all().map_err(|e| fail("write to it", e))?;
    }
    std::fs::rename(&r.write, target).map_err(|e| fail("replace it", e))
}

/// Appends `args` to the `--results` file (opening it at the first write).
fn write_file(r: &Results, args: std::fmt::Arguments) {
    let mut f = RESULTS_FILE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if f.is_none() {
        match std::fs::OpenOptions::new().append(true).open(&r.write) {
            Ok(file) => *f = Some(file),
            Err(e) => {
                drop(f);
                let _ = finish(false);
                eprintln!("multios: --results {}: cannot open it: {e}", r.path.display());
                std::process::exit(1);
            }
        }
    }
    if let Some(file) = f.as_mut() {
        if let Err(e) = file.write_fmt(args) {
            drop(f);
            let _ = finish(false);
            eprintln!("multios: --results {}: cannot write to it: {e}", r.path.display());
            std::process::exit(1);
        }
    }
}

/// Writes `args` to stdout (or the `--results` file); exits with status 0 when the reader of a
/// pipe has gone.
pub fn write(args: std::fmt::Arguments) {
    if let Some(r) = RESULTS.get() {
        return write_file(r, args);
    }
    let mut out = std::io::stdout().lock();
    match out.write_fmt(args).and_then(|()| out.flush()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => {
            eprintln!("multios: cannot write to stdout: {e}");
            std::process::exit(1);
        }
    }
}

/// `print!` to stdout that survives a closed pipe (see the module comment).
macro_rules! out {
    ($($t:tt)*) => {
        $crate::stdout::write(format_args!($($t)*))
    };
}

/// `println!` to stdout that survives a closed pipe (see the module comment).
macro_rules! outln {
    () => {
        $crate::stdout::write(format_args!("\n"))
    };
    ($($t:tt)*) => {
        $crate::stdout::write(format_args!("{}\n", format_args!($($t)*)))
    };
}
