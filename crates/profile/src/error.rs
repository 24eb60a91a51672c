use std::path::PathBuf;

/// Everything that can be wrong with a profile file.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("cannot read profile {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot write profile {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
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
