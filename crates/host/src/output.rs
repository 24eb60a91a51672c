//! Output files checked before a run, so that a long run does not end with nowhere to write.

use std::path::{Path, PathBuf};

/// Why `path` cannot be written, and what would fix it.
#[derive(Debug, thiserror::Error)]
#[error("{path}: cannot write there ({why}); {fix}")]
pub struct NotWritable {
    pub path: String,
    pub why: String,
    pub fix: &'static str,
}

/// Checks that a file can be written at `path`: it is not a directory, its directory exists,
/// and it (or, for a new file, its directory) is writable. Leaves an existing file untouched
/// and creates no file at `path` (a new file is probed with a uniquely named file beside it,
/// removed at once).
pub fn check_writable(path: &Path) -> Result<(), NotWritable> {
    let err = |why: String, fix: &'static str| NotWritable {
        path: path.display().to_string(),
        why,
        fix,
    };
    if path.is_dir() {
        return Err(err("it is a directory".into(), "name a file, e.g. DIR/out.json"));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        return Err(err(
            format!("directory {} does not exist", dir.display()),
            "create it first or choose another path",
        ));
    }
    let fix = "choose a path you may write, or fix the permissions";
    if path.exists() {
        return std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map(drop)
            .map_err(|e| err(e.to_string(), fix));
    }
    let probe = dir.join(format!(".multios-write-check-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .map(drop)
        .map_err(|e| err(format!("directory {}: {e}", dir.display()), fix))?;
    std::fs::remove_file(&probe).ok();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_missing_parents_and_new_files() {
        let tmp = std::env::temp_dir();
        let e = check_writable(&tmp)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("it is a directory"), "{e}");
        let e = check_writable(&tmp.join("multios-no-such-dir-x/f.json"))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("does not exist"), "{e}");
        let new = tmp.join(format!("multios-host-check-{}.json", std::process::id()));
        assert!(check_writable(&new).is_ok());
        assert!(!new.exists(), "the check must leave no file behind");
    }
}
