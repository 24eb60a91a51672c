//! Writing results to stdout. `println!` panics when stdout is a pipe whose reader has gone
//! (`multios … --json | head -1`); these macros end the process quietly instead, with status 0,
//! as ripgrep does. (SIGPIPE stays ignored: the emulator's delegates and the LWK's proxy write on the
//! guest's behalf and must get EPIPE, not die.)

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// `--results FILE`: where multios's own output goes instead of stdout, which then stays the
/// program's alone (`multios --json --results r.json emulate … -- prog > prog.out`).
static RESULTS: OnceLock<PathBuf> = OnceLock::new();
/// The results file, opened at the first write. Not before: during `lwk run` the VMM's process
/// is the guest's, and a descriptor opened at start-up would sit among the guest's numbers.
static RESULTS_FILE: Mutex<Option<std::fs::File>> = Mutex::new(None);

/// Sends every later write to `path` instead of stdout. The file is created (emptied) now, so that
/// a path that cannot be written is refused before any work, and closed again at once.
pub fn results_to(path: &Path) -> Result<(), String> {
    std::fs::File::create(path)
        .map_err(|e| format!("--results {}: cannot create it: {e}", path.display()))?;
    RESULTS
        .set(path.to_path_buf())
        .map_err(|_| "--results given twice".to_string())
}

/// Whether multios's own output goes to a `--results` file.
pub fn to_file() -> bool {
    RESULTS.get().is_some()
}

/// Appends `args` to the `--results` file (opening it at the first write).
fn write_file(path: &Path, args: std::fmt::Arguments) {
    let mut f = RESULTS_FILE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if f.is_none() {
        match std::fs::OpenOptions::new().append(true).open(path) {
            Ok(file) => *f = Some(file),
            Err(e) => {
                eprintln!("multios: --results {}: cannot open it: {e}", path.display());
                std::process::exit(1);
            }
        }
    }
    if let Some(file) = f.as_mut() {
        if let Err(e) = file.write_fmt(args) {
            eprintln!("multios: --results {}: cannot write to it: {e}", path.display());
            std::process::exit(1);
        }
    }
}

/// Writes `args` to stdout (or the `--results` file); exits with status 0 when the reader of a
/// pipe has gone.
pub fn write(args: std::fmt::Arguments) {
    if let Some(p) = RESULTS.get() {
        return write_file(p, args);
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
