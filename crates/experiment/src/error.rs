//! What can stop an experiment.

/// An experiment's failure: a bad configuration (naming the field and what would fix it), or the
/// failure of one of the parts it drives.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    /// A configuration value is out of range; the message names the flag or field.
    #[error("{0}")]
    Config(String),
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    /// A program the experiment ran failed or printed something unexpected.
    #[error("{0}")]
    Run(String),
    #[error(transparent)]
    Emulate(#[from] multios_emulate::EmulateError),
    #[error(transparent)]
    Model(#[from] multios_model::ModelError),
    #[error(transparent)]
    Plot(#[from] multios_plot::PlotError),
    #[error(transparent)]
    Profile(#[from] multios_profile::ProfileError),
    #[error(transparent)]
    LwkBench(#[from] multios_lwk::bench::BenchError),
    #[error(transparent)]
    ProfilerBench(#[from] multios_profiler::bench::BenchError),
    #[error(transparent)]
    Profiler(#[from] multios_profiler::ProfilerError),
    #[error(transparent)]
    NoiseGuest(#[from] multios_noise::guest::GuestError),
    #[error(transparent)]
    NoiseLoad(#[from] multios_noise::load::LoadError),
}

impl ExperimentError {
    /// An I/O error while doing `what` (e.g. "writing /tmp/x/mix").
    pub fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ExperimentError {
        let what = what.into();
        move |source| ExperimentError::Io { what, source }
    }
}
