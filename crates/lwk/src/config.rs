//! What to run and how: [`Config`], the system-call [`Backend`], and the default CPU partition.

use crate::policy::LocalSet;
use std::ffi::OsString;
use std::time::Duration;

/// How system calls reach the VMM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Shared-memory ring served by a polling proxy thread (doorbell exit as fallback).
    Ring { proxy_cpu: Option<usize> },
    /// Every call exits to the vCPU thread through the doorbell (MMIO exit); no proxy thread.
    Exit,
}

/// What to run and how.
#[derive(Debug, Clone)]
pub struct Config {
    /// The program as the user named it (searched in PATH when it has no '/').
    pub program: String,
    /// argv, including argv[0].
    pub argv: Vec<OsString>,
    /// The environment (`NAME=value`).
    pub env: Vec<OsString>,
    /// Size of the application window in bytes (multiple of 2 MiB).
    pub mem_size: u64,
    pub policy: LocalSet,
    pub backend: Backend,
    /// Stub spin iterations before the doorbell (one `pause` is ≈ 40 ns here: 1000 ≈ 40 µs).
    pub spin_budget: u32,
    /// Do not print refused-call reports to stderr (they are still in `Outcome::notes`).
    pub quiet: bool,
    /// Rewrite `mov $nr,%eax; syscall` sites of the program and its libraries to enter the stub
    /// without the trap (see `rewrite.rs`). On by default.
    pub rewrite_syscalls: bool,
    /// How long the proxy keeps polling after the last call before it parks. A call that comes
    /// later rings the doorbell (≈ 20 µs) and unparks it; a polling proxy slows a computing guest
    /// on this machine (its sibling CPU), hence the short default.
    pub proxy_idle_spin: Duration,
    /// How often the proxy, polling idle, exits to the hypervisor so that the guest's TLB-flush
    /// IPIs reach its CPU in µs rather than ms (`multios_host::hvexit`); `None`: never. From
    /// `MULTIOS_HV_EXIT_US` (default 20 µs).
    pub proxy_hv_exit: Option<Duration>,
    /// The LWK partition's CPUs: vCPU k runs pinned on `cpus[k % len]`, and the guest's
    /// sched_getaffinity reports the whole list. Empty: vCPUs are not pinned and the VMM's own
    /// affinity is reported.
    pub cpus: Vec<usize>,
    /// Write every delegated call and every fault turned into a signal to this file (`trace/`).
    pub trace: Option<std::path::PathBuf>,
    /// Library functions bound to LWK implementations in the guest (`overrides/`).
    pub overrides: Option<crate::overrides::Overrides>,
    /// Back anonymous writable mappings with host pages when they are made (Multiverse's
    /// prefault, Fig. 12), instead of one fault per first touch.
    pub prefault: bool,
    /// Reserve the LWK's CPUs (an isolated cpuset partition for the run) and its memory (the
    /// window locked and pre-faulted): IHK's `reserve cpu`/`reserve mem` (`reserve.rs`).
    pub reserve: bool,
    /// Programs that an execve in the guest runs on Linux, outside the LWK, as a Linux process
    /// with the guest's pid, fds, mask and ignored signals (`syscall/linux_exec.rs`): bare names,
    /// looked up when the VMM starts in its PATH and Open MPI's package directories, or absolute
    /// paths; the files found are trusted by identity (device, inode, ctime), never by name, and
    /// only when the user cannot write them (or is root). Default: none. [`MPI_DAEMONS`] is the
    /// list for MPI singletons (`--linux-exec orted,prted`); a program on the list runs natively
    /// on arguments, environment and configuration files the guest chose (Open MPI's component
    /// paths among them), so it is an opt-in for guests that are trusted (issue #16).
    pub linux_exec: Vec<String>,
    /// Transparent huge pages behind the guest's memory (`--huge-pages`): fewer faults and shadow
    /// entries where the host's free 2 MiB blocks are in use already, but on a VM whose host
    /// reclaims free memory each one is faulted in below, 4 KiB at a time (`memory.rs`,
    /// `set_huge_pages`). Off by default; `MULTIOS_LWK_HUGE_PAGES=1` turns it on for every run
    /// (to measure the two side by side through commands that start `lwk run` themselves, such
    /// as `bench multiverse`).
    pub huge_pages: bool,
    /// Populate new anonymous memory (mmap, brk) on the proxy's CPU before the guest touches it,
    /// up to this many bytes of each range (`--populate`, `populate.rs`; 0: off). Default from
    /// `MULTIOS_LWK_POPULATE` (`off`, `ahead`, or MiB per range).
    pub populate_cap: u64,
    /// Populate up to this many bytes of each new anonymous range (mmap, brk) in the call that
    /// makes it (`--populate-at-map`, `atmap.rs`; 0: off). Default
    /// [`crate::atmap::DEFAULT_PER_RANGE`], or `MULTIOS_LWK_POPULATE_SYNC` (KiB, `off`).
    pub populate_at_map: u64,
    /// Keep this many bytes of the free memory the next anonymous mappings will get populated,
    /// by the proxy between calls (`--populate-next`, `next.rs`; 0: off). Default
    /// [`crate::next::DEFAULT_AHEAD`] (off), or `MULTIOS_LWK_POPULATE_NEXT` (`on`, KiB, `off`).
    pub populate_next: u64,
    /// List the guest's areas with their resident pages at the end (`costs.areas`;
    /// `residency.rs`): `lwk run -v` and `--summary` ask for it.
    pub count_resident: bool,
}

/// The MPI runtime's daemons, which stay on Linux under `mpirun` too (an Open MPI singleton's
/// MPI_Init forks and execs `orted`; Open MPI 5's is `prted`): the list to give `linux_exec` for
/// MPI singletons. Not the default (issue #16): a daemon run natively takes the guest's
/// environment and configuration, and Open MPI's can name the components it loads.
pub const MPI_DAEMONS: &[&str] = &["orted", "prted"];

impl Config {
    /// The proxy's idle behaviour: its polling threshold and its exits to the hypervisor.
    pub fn proxy_idle(&self) -> crate::proxy::Idle {
        crate::proxy::Idle {
            spin: self.proxy_idle_spin,
            hv_exit: self.proxy_hv_exit,
        }
    }

    /// Runs `program` with `args` and the current environment, default settings.
    pub fn new(program: &str, args: &[&str]) -> Self {
        let (proxy_cpu, cpus) = default_partition(&crate::sys::affinity_list());
        let mut argv = vec![OsString::from(program)];
        argv.extend(args.iter().map(OsString::from));
        Config {
            program: program.to_string(),
            argv,
            env: std::env::vars_os()
                .map(|(k, v)| {
                    let mut s = k;
                    s.push("=");
                    s.push(v);
                    s
                })
                .collect(),
            mem_size: 4 << 30,
            policy: LocalSet::mckernel(),
            // A proxy sharing the only CPU would steal the guest's time while it polls: without a
            // CPU of its own, every call exits to the vCPU's thread instead (see docs/LWK.md).
            backend: if proxy_cpu.is_some_and(|p| cpus.contains(&p)) {
                Backend::Exit
            } else {
                Backend::Ring { proxy_cpu }
            },
            cpus,
            trace: None,
            overrides: None,
            prefault: false,
            reserve: false,
            linux_exec: Vec::new(),
            huge_pages: std::env::var_os("MULTIOS_LWK_HUGE_PAGES").is_some_and(|v| v == "1"),
            populate_cap: crate::populate::Ahead::cap_from_env(0),
            populate_at_map: crate::atmap::AtMap::per_range_from_env(crate::atmap::DEFAULT_PER_RANGE),
            populate_next: crate::next::Next::ahead_from_env(crate::next::DEFAULT_AHEAD),
            count_resident: false,
            spin_budget: 1_000,
            quiet: false,
            rewrite_syscalls: true,
            proxy_idle_spin: Duration::from_millis(1),
            proxy_hv_exit: multios_host::hvexit::period_from_env(),
        }
    }
}

/// The default split of `available` CPUs: the one that takes the most device interrupts serves
/// Linux (the proxy; the first on a tie), the rest are the LWK's; with a single CPU both share
/// it (`multios_host::irqs`: a device's interrupt for a CPU busy with the guest waits ms here).
pub fn default_partition(available: &[usize]) -> (Option<usize>, Vec<usize>) {
    partition_by_interrupts(available, &multios_host::irqs::device_interrupts_per_cpu())
}

/// [`default_partition`] with the device interrupts each CPU took (index = CPU).
pub fn partition_by_interrupts(available: &[usize], per_cpu: &[u64]) -> (Option<usize>, Vec<usize>) {
    match available {
        [] => (None, Vec::new()),
        [only] => (Some(*only), vec![*only]),
        _ => {
            let linux = multios_host::irqs::busiest(available, per_cpu).unwrap_or(available[0]);
            (
                Some(linux),
                available.iter().copied().filter(|&c| c != linux).collect(),
            )
        }
    }
}
