//! multios map (issue #12, seed 001 "NetworkedOS"): the multi-layer graph of one run of a program
//! (interaction layer from eBPF, physical-frame layer from /proc/PID/pagemap, architecture layer from
//! sysfs or an hwloc-style synthetic string), the paper's overlapping greedy hierarchical partitioning
//! minimizing T(s) = W_seq + W_par/N + W_c/N, a Louvain baseline, the O(P) affinity-aware placement with
//! TreeMatch-style and round-robin baselines, exports, and `map run` applying a placement as a
//! program's threads appear — when its own model predicts the placement faster than Linux's
//! ([`decide`]). The format and the algorithms are described in docs/NETWORKEDOS.md.

pub mod decide;
pub mod export;
pub mod graph;
pub mod partition;
pub mod place;
mod procevents;
mod procfs;
pub mod program;
pub mod programs;
pub mod project;
pub mod record;
pub mod run;
mod sys;
pub mod topology;

pub use graph::{Edge, EdgeKind, Families, Graph, Node, SharedPages};
pub use partition::{CostModel, Partition, Quality};
pub use place::{Costs, Placement, Strategy};
pub use topology::Topology;

/// A finished command's status as a shell reports it: its exit code, or 128 + the signal that
/// ended it (a program killed by SIGSEGV was reported as exiting 0 by `map record` and 1 by
/// `map run`).
pub fn shell_status(status: &std::process::ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.code().or_else(|| status.signal().map(|s| 128 + s))
}

/// Where a program run by `map record` or `map run` reads and writes (default: multios's own
/// streams, inherited). `map run --learn` runs the program twice: the learning run reads the
/// same captured stdin as the placed run and its output is discarded, so the program's output
/// appears once and its input is not used up by the first run.
#[derive(Debug, Clone, Default)]
pub struct ChildIo {
    /// A file the program reads as its stdin.
    pub stdin: Option<std::path::PathBuf>,
    /// Its stdout and stderr to /dev/null.
    pub quiet: bool,
}

impl ChildIo {
    /// Sets `cmd`'s streams.
    pub fn apply(&self, cmd: &mut std::process::Command) -> std::io::Result<()> {
        if let Some(p) = &self.stdin {
            cmd.stdin(std::fs::File::open(p)?);
        }
        if self.quiet {
            cmd.stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
        }
        Ok(())
    }
}
