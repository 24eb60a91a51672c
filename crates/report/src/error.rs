//! What can go wrong while building a report.

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Profile(#[from] multios_profile::ProfileError),
    #[error("{what}: {source}")]
    Model {
        what: String,
        source: multios_model::ModelError,
    },
    #[error("--fc '{text}': {source}")]
    Fc {
        text: String,
        source: multios_units::UnitError,
    },
    #[error("{path}: not JSON ({source}); give the output of `multios … --json`")]
    Json { path: String, source: serde_json::Error },
    #[error(
        "{path}: not a result multios can report (expected `multios validate|emulate --compare|demo|noise … --json` \
         output, a profile, or `lwk run --profile` output)"
    )]
    Unknown { path: String },
    #[error("cannot write {path}: {source}")]
    Write { path: String, source: std::io::Error },
    #[error(transparent)]
    Columns(#[from] multios_columns::ColumnsError),
    #[error("Extra-P input: {0}")]
    Extrap(String),
    #[error("cannot embed the data: {0}")]
    Embed(serde_json::Error),
}
