use std::path::PathBuf;

/// Everything that can be wrong with a profile file.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot write profile {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error(
        "cannot write profile {path}: {why}; choose another file with -o (checked before the command starts)"
    )]
    Unwritable { path: PathBuf, why: String },
    #[error(
        "profile {path} is larger than {max_mib} MiB (or an endless device or pipe): give a profile file written by multios"
    )]
    TooLarge { path: PathBuf, max_mib: u64 },
    #[error("{path}:{line}:{column}: field '{field}': {msg}")]
    Malformed {
        path: String,
        line: usize,
        column: usize,
        field: String,
        msg: String,
    },
    #[error(
        "{path}: schema_version {found} is newer than this multios reads (up to {supported}): upgrade multios"
    )]
    NewerSchema {
        path: String,
        found: u64,
        supported: u32,
    },
    #[error("{path}: field '{field}': {msg}")]
    Invalid {
        path: String,
        field: String,
        msg: String,
    },
    #[error("{path}:{line}: {msg}")]
    Import { path: String, line: usize, msg: String },
    #[error("cannot merge profiles: {0}")]
    Merge(String),
}
