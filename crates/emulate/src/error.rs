//! Errors of the emulator.

/// Everything that can go wrong setting up or running an emulated program.
#[derive(Debug, thiserror::Error)]
pub enum EmulateError {
    #[error(transparent)]
    Cost(#[from] crate::cost::CostError),
    #[error(transparent)]
    Cpu(#[from] crate::cpus::CpuError),
    #[error("--policy '{input}': {msg}")]
    Policy { input: String, msg: String },
    #[error("no command given: write it after --, e.g. multios emulate --policy all --fc 10us -- ls")]
    NoCommand,
    #[error("command '{0}' not found in PATH")]
    NotFound(String),
    #[error("'{0}' is a directory, not a program: give the program to run after --")]
    IsDirectory(String),
    #[error("'{0}' is not executable: make it so (chmod +x) or run it through its interpreter")]
    NotExecutable(String),
    #[error("'{0}' does not exist")]
    NoSuchFile(String),
    #[error("{flag} {path}: cannot write there ({why}); {fix}")]
    NotWritable {
        flag: String,
        path: String,
        why: String,
        fix: &'static str,
    },
    #[error("argument or environment string '{0}' contains a NUL byte")]
    Nul(String),
    #[error(
        "--fc {requested}: below the floor of the '{mechanism}' mechanism on this machine ({floor}); \
             request at least the floor, or use --fc 0ns for the mechanism alone"
    )]
    BelowFloor {
        mechanism: &'static str,
        requested: String,
        floor: String,
    },
    #[error("cannot run '{cmd}' under emulation: {stage} failed: {cause}")]
    Launch {
        cmd: String,
        stage: &'static str,
        cause: std::io::Error,
    },
    #[error("{what}: {cause}")]
    Io { what: String, cause: std::io::Error },
    #[error("supervisor: {0}")]
    Supervisor(String),
    #[error(
        "the '{mechanism}' mechanism needs a dynamically linked program (it injects a preload library); \
             '{path}' is statically linked: use --mechanism proxy"
    )]
    Static { mechanism: &'static str, path: String },
    #[error("mechanism '{0}' is not available in this build: use --mechanism proxy or migrate")]
    NotBuilt(&'static str),
    #[error("preload library: {0}")]
    Preload(String),
    #[error("preload library configuration: {0}")]
    PreloadBlock(#[from] multios_preload_abi::BlockError),
    #[error(
        "the preload library refused its configuration block {file}: {reason}; multios writes version \
         {version}, so multios and the library come from different builds: rebuild multios"
    )]
    PreloadRefused {
        file: String,
        reason: String,
        version: u32,
    },
}
