//! The profile's data types. Field names are the JSON names; times are seconds (f64) unless the
//! name says otherwise. `docs/PROFILE-FORMAT.md` documents every field.

use crate::hist::Log2Histogram;
use serde::{Deserialize, Serialize};

/// The newest version this build reads. Version 2 added `collection.coverage` (a version-1 file reads
/// as one without it: coverage unknown); version 3 added `processes` (written only when the run was
/// profiled per process, so that a profile without it stays a version-2 file older readers take);
/// version 4 added `memory_bytes` (written only by a backend that records it); version 5 added
/// `processes[].images` and `processes[].code_mappings` (written only when some process has them);
/// version 6 added `processes[].anon_maps` (written only when some process has them); version 7
/// added `syscalls[].gap_hist_log2_ns` (written only when some call has it).
pub const SCHEMA_VERSION: u32 = 7;

/// The version of a profile with the processes' anonymous mappings and without the calls' gaps.
pub const SCHEMA_VERSION_NO_GAPS: u32 = 6;

/// The version of a profile with the processes' images and without their anonymous mappings.
pub const SCHEMA_VERSION_NO_ANON_MAPS: u32 = 5;

/// The version of a profile with `memory_bytes` and without the processes' images.
pub const SCHEMA_VERSION_NO_IMAGES: u32 = 4;

/// The version of a profile with `processes` and without `memory_bytes`.
pub const SCHEMA_VERSION_NO_MEMORY_BYTES: u32 = 3;

/// The version of a profile without `processes`.
pub const SCHEMA_VERSION_NO_PROCESSES: u32 = 2;

/// A system-call profile of one program run (or of several ranks, merged).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub schema_version: u32,
    /// The command that was profiled: program and arguments.
    pub command: Vec<String>,
    pub machine: Machine,
    pub collection: Collection,
    /// Wall-clock time of the run, first exec to last exit.
    pub wall_time_s: f64,
    /// C: time not spent inside system calls, summed over the traced tasks.
    pub compute_time_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<Exit>,
    /// One entry per system call that was invoked, sorted by total time, largest first.
    pub syscalls: Vec<SyscallStats>,
    /// Per-thread activity, for the queueing model's arrival rates λ_k.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<ThreadStats>,
    /// Per-rank summaries when this profile merges several MPI ranks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<RankSummary>,
    /// Per process of the traced tree (schema 3; `multios profile --per-process`): when each ran,
    /// its parent, and its own n(s), g(s) and C — what a projection that composes the processes
    /// along the tree needs (the top-level fields sum every process).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub processes: Vec<ProcessStats>,
    /// Σ of the lengths the memory calls asked for (schema 4; the eBPF backend): what the LWK's
    /// own mmap/munmap/mremap cost grows with (`validate --terms memcalls`, issue #15).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<MemoryBytes>,
}

/// The bytes the memory calls of a run asked for, summed over every call (failed ones too).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryBytes {
    /// Σ mmap length.
    pub mmap: u64,
    /// Σ munmap length.
    pub munmap: u64,
    /// Σ mremap old length (what a moving mremap copies).
    pub mremap_old: u64,
    /// Σ mremap new length.
    pub mremap_new: u64,
    /// The mmaps of a file (without MAP_ANONYMOUS), counted in `mmap` too: how many …
    pub mmap_file_calls: u64,
    /// … and their Σ length.
    pub mmap_file: u64,
}

/// Facts about the machine the profile was taken on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    pub cpu_model: String,
    pub cores: u32,
    pub kernel: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
}

/// How the profile was collected.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Collection {
    /// e.g. `multios-ebpf`, `multios-ptrace`, `multios-lwk`, `strace -c`, `perf trace -s`.
    pub tool: String,
    /// The multios version that wrote the file.
    pub multios_version: String,
    /// `high` (in-kernel timing, bias subtracted), `low` (ptrace stops, calibrated), `imported`.
    pub accuracy: String,
    /// Whether g(s) is wall-clock time per call (true) or CPU time in the kernel (false, `strace -c` default).
    pub wall_clock_syscall_times: bool,
    /// Per-call probe bias that was measured at start-up and subtracted from every call, in ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bias_ns_subtracted: Option<f64>,
    /// True when the run did not finish normally (crash, kill, Ctrl-C, attach with a duration).
    #[serde(default)]
    pub partial: bool,
    /// Seconds since the Unix epoch when collection started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_unix_s: Option<f64>,
    /// The file an imported profile came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// What the collecting backend saw of the run (schema 2); absent when unknown (version-1 files,
    /// imports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<Coverage>,
}

/// How much of the run a backend saw: whether every system call of every task was counted, what it
/// misses, and which columns it does not fill (so that a 0 there is not read as a measurement).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Coverage {
    /// True when every system call of every traced task, from its exec (or fork) to its exit, was counted.
    pub complete: bool,
    /// What the backend does not see, e.g. "calls before the preload library's constructor".
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub misses: Vec<String>,
    /// Profile fields the backend leaves empty or zero, e.g. `syscalls[].errors`, `threads`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_recorded: Vec<String>,
}

impl Coverage {
    /// Every call seen, every field filled.
    pub fn complete() -> Self {
        Coverage {
            complete: true,
            ..Coverage::default()
        }
    }

    /// Incomplete: the backend misses `misses` and leaves `not_recorded` empty.
    pub fn partial(misses: &[&str], not_recorded: &[&str]) -> Self {
        Coverage {
            complete: misses.is_empty(),
            misses: misses.iter().map(|s| s.to_string()).collect(),
            not_recorded: not_recorded.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// Whether the field `name` (e.g. "syscalls[].errors", "threads") is recorded.
    pub fn records(&self, name: &str) -> bool {
        !self.not_recorded.iter().any(|n| n == name)
    }

    /// One line for people: "complete", or "incomplete: misses …; not recorded: …".
    pub fn summary(&self) -> String {
        let mut s = if self.complete {
            "complete".to_string()
        } else {
            "INCOMPLETE".to_string()
        };
        if !self.misses.is_empty() {
            s.push_str(&format!("; misses {}", self.misses.join(", ")));
        }
        if !self.not_recorded.is_empty() {
            s.push_str(&format!("; not recorded: {}", self.not_recorded.join(", ")));
        }
        s
    }
}

/// How the profiled program ended.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exit {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
}

/// n(s), g(s) and the distribution of per-call times for one system call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyscallStats {
    pub name: String,
    pub nr: u32,
    /// n(s): number of invocations.
    pub count: u64,
    /// g(s): total time of all invocations, in seconds.
    pub total_s: f64,
    /// Calls that returned an error.
    #[serde(default)]
    pub errors: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_s: Option<f64>,
    /// Log2 histogram of per-call times in ns (bucket k: [2^k, 2^(k+1)) ns).
    #[serde(default, skip_serializing_if = "is_empty_hist")]
    pub hist_log2_ns: Log2Histogram,
    /// Log2 histogram of the time in ns from the calling thread's previous call's return to each
    /// call (a thread's first call: from its start) (schema 7; the eBPF backend): how far apart the
    /// calls come, which decides whether a delegate idling between them has gone to sleep.
    #[serde(default, skip_serializing_if = "is_empty_hist")]
    pub gap_hist_log2_ns: Log2Histogram,
    /// Where the calls were served, for runs under the emulator or the LWK.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,
}

fn is_empty_hist(h: &Log2Histogram) -> bool {
    h.0.is_empty()
}

impl SyscallStats {
    /// Mean time per call in seconds (0 when never called).
    pub fn mean_s(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.total_s / self.count as f64
        }
    }
}

/// Local vs delegated split of one system call's invocations.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Placement {
    pub local_count: u64,
    pub local_total_s: f64,
    pub delegated_count: u64,
    pub delegated_total_s: f64,
    /// Calls that entered the LWK through the `syscall` instruction's trap rather than a
    /// rewritten site (`multios lwk run`; issue #14): absent where the tool does not know.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trapped_count: Option<u64>,
}

/// One traced thread: how many system calls it made over how long (λ_k = calls / lifetime).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThreadStats {
    pub tid: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    pub syscalls: u64,
    /// Time spent inside system calls by this thread.
    pub syscall_time_s: f64,
    /// From the thread's first traced event to its exit (or the end of tracing).
    pub lifetime_s: f64,
}

impl ThreadStats {
    /// λ_k: system calls per second.
    pub fn rate_hz(&self) -> f64 {
        if self.lifetime_s > 0.0 {
            self.syscalls as f64 / self.lifetime_s
        } else {
            0.0
        }
    }
}

/// One process of the traced tree (a thread group: its threads, every image it exec'd).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessStats {
    pub pid: u32,
    /// The process that forked it; `None` for the root of the tree (and where it is not known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ppid: Option<u32>,
    /// The MPI rank whose profile it came from (`multios profile merge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// Its command name when it exited (the last image it exec'd).
    pub name: String,
    /// Its fork (the root: its exec) and its last thread's exit, seconds from the run's start.
    pub start_s: f64,
    pub end_s: f64,
    pub threads: u32,
    /// Σ over its threads of their lifetimes.
    pub lifetime_s: f64,
    /// Its C: Σ lifetimes − Σ g(s) of its own calls.
    pub compute_time_s: f64,
    /// Its own n(s) and g(s), largest g first.
    pub syscalls: Vec<ProcessCall>,
    /// The images it exec'd, in order (schema 5; the eBPF backend): what its start-up costs the
    /// LWK grows with (`validate --terms images`, issue #15).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<crate::ExecImage>,
    /// Its executable file mappings (schema 5; the eBPF backend): its libraries' text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_mappings: Option<crate::CodeMappings>,
    /// Its new anonymous ranges, by length (schema 6; the eBPF and ptrace backends): what the LWK
    /// populates at map time (`validate --terms touch`, issue #15).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anon_maps: Option<crate::AnonMaps>,
}

/// n(s) and g(s) of one system call within one process.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessCall {
    pub name: String,
    pub count: u64,
    pub total_s: f64,
}

impl ProcessStats {
    /// n(s) of `name` in this process (0 when it never made the call).
    pub fn count_of(&self, name: &str) -> u64 {
        self.syscalls
            .iter()
            .find(|c| c.name == name)
            .map_or(0, |c| c.count)
    }
}

/// The per-rank detail kept by `multios profile merge`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RankSummary {
    pub rank: u32,
    pub source: String,
    pub wall_time_s: f64,
    pub compute_time_s: f64,
    pub syscall_time_s: f64,
    pub syscalls: u64,
    #[serde(default)]
    pub partial: bool,
}

impl Profile {
    /// An empty profile for `command`, stamped with this build's version and the current machine.
    pub fn new(command: Vec<String>, tool: &str, accuracy: &str) -> Self {
        Profile {
            schema_version: SCHEMA_VERSION_NO_PROCESSES,
            command,
            machine: Machine::probe(),
            collection: Collection {
                tool: tool.to_string(),
                multios_version: env!("CARGO_PKG_VERSION").to_string(),
                accuracy: accuracy.to_string(),
                wall_clock_syscall_times: true,
                started_unix_s: std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .ok()
                    .map(|d| d.as_secs_f64()),
                ..Collection::default()
            },
            wall_time_s: 0.0,
            compute_time_s: 0.0,
            exit: None,
            syscalls: Vec::new(),
            threads: Vec::new(),
            ranks: Vec::new(),
            processes: Vec::new(),
            memory_bytes: None,
        }
    }

    /// The schema version this profile is written with: 7 with a call's gaps, else 6 with a
    /// process's anonymous mappings, else 5 with a process's images or code mappings, else 4 with `memory_bytes`, else 3 with
    /// `processes`, else 2.
    pub fn written_version(&self) -> u32 {
        if self.has_gaps() {
            SCHEMA_VERSION
        } else if self.has_anon_maps() {
            SCHEMA_VERSION_NO_GAPS
        } else if self.has_images() {
            SCHEMA_VERSION_NO_ANON_MAPS
        } else if self.memory_bytes.is_some() {
            SCHEMA_VERSION_NO_IMAGES
        } else if !self.processes.is_empty() {
            SCHEMA_VERSION_NO_MEMORY_BYTES
        } else {
            SCHEMA_VERSION_NO_PROCESSES
        }
    }

    /// Whether a call records its gaps (schema 7).
    pub fn has_gaps(&self) -> bool {
        self.syscalls.iter().any(|c| !c.gap_hist_log2_ns.0.is_empty())
    }

    /// Whether a process records its new anonymous ranges (schema 6).
    pub fn has_anon_maps(&self) -> bool {
        self.processes.iter().any(|q| q.anon_maps.is_some())
    }

    /// Whether a process records the images it exec'd or its code mappings (schema 5).
    pub fn has_images(&self) -> bool {
        self.processes
            .iter()
            .any(|q| !q.images.is_empty() || q.code_mappings.is_some())
    }

    /// The profiled program's file name (the last component of `command[0]`), if there is a command.
    pub fn program(&self) -> Option<&str> {
        self.command.first().map(|c| c.rsplit('/').next().unwrap_or(c))
    }

    /// Σ g(s).
    pub fn syscall_time_s(&self) -> f64 {
        // fold, not sum: an empty f64 sum is −0.0 (Rust ≥ 1.82), printed "p = -0.0000%"
        self.syscalls.iter().map(|s| s.total_s).fold(0.0, |a, b| a + b)
    }

    /// Σ n(s), saturating at `u64::MAX` (a profile that passed validation never gets there).
    pub fn syscall_count(&self) -> u64 {
        self.syscalls.iter().fold(0u64, |a, s| a.saturating_add(s.count))
    }

    /// p = Σg / (C + Σg): the share of time spent in system calls.
    pub fn p(&self) -> f64 {
        let g = self.syscall_time_s();
        let t = self.compute_time_s + g;
        if t > 0.0 {
            g / t
        } else {
            0.0
        }
    }

    /// The stats for system call `name`.
    pub fn syscall(&self, name: &str) -> Option<&SyscallStats> {
        self.syscalls.iter().find(|s| s.name == name)
    }

    /// Sorts syscalls by total time, largest first (ties by name), as writers must.
    pub fn sort(&mut self) {
        self.syscalls
            .sort_by(|a, b| b.total_s.total_cmp(&a.total_s).then_with(|| a.name.cmp(&b.name)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty f64 `sum()` is −0.0 since Rust 1.82: a profile without system calls printed
    /// "p = -0.0000%" and "Σg = -0.000 s".
    #[test]
    fn issue_16_an_empty_profile_has_plus_zero_syscall_time() {
        let mut p = Profile::new(vec!["true".into()], "test", "exact");
        p.compute_time_s = 1.0;
        assert!(p.syscall_time_s().is_sign_positive());
        assert_eq!(format!("{:.3}", p.syscall_time_s()), "0.000");
        assert_eq!(format!("{:.4}%", p.p() * 100.0), "0.0000%");
    }
}
