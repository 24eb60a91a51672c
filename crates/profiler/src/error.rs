use std::path::PathBuf;

/// Everything that can stop a profiling run.
#[derive(Debug, thiserror::Error)]
pub enum ProfilerError {
    #[error("no command given: write it after '--', e.g. 'multios profile -- ls -l'")]
    NoCommand,
    #[error("command not found: '{0}' is not a file and not in any directory of $PATH")]
    CommandNotFound(String),
    #[error("cannot execute '{path}': {source}")]
    Exec { path: PathBuf, source: std::io::Error },
    #[error(
        "the eBPF backend needs root or CAP_BPF+CAP_PERFMON ({what}: {detail}); run as root or use '--backend ptrace'"
    )]
    EbpfPermission { what: String, detail: String },
    #[error("eBPF: {what}: {msg}; the ptrace backend ('--backend ptrace') does not need eBPF")]
    Ebpf { what: String, msg: String },
    #[error("process {0} does not exist (or has already exited): check the PID given to -p")]
    PidGone(u32),
    #[error(
        "-p {tid}: {tid} is a thread of process {process}, not a process: give -p {process} to profile the process (all its threads)"
    )]
    NotAProcess { tid: u32, process: u32 },
    #[error("ptrace: {what}: {source}")]
    Ptrace { what: String, source: std::io::Error },
    #[error("{what}: {source}")]
    Os { what: String, source: std::io::Error },
    /// The in-process backend (the emulator's preload library) could not profile the program.
    #[error("multios profile --backend inproc: {0}")]
    Inproc(String),
    /// A combination of options the backends cannot serve.
    #[error("{0}")]
    Unsupported(String),
}

impl ProfilerError {
    pub(crate) fn os(what: impl Into<String>, source: impl Into<std::io::Error>) -> Self {
        ProfilerError::Os {
            what: what.into(),
            source: source.into(),
        }
    }
}
