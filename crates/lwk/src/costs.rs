//! Where an LWK run's time goes besides the guest's own instructions (issue #13): the start-up
//! phases, and counts of the events that cost time in the VMM or in KVM — KVM's own statistics
//! of the VM and its vCPUs (`KVM_GET_STATS_FD`: shadow page faults it served, exits…), the
//! VMM's host page faults, and the memslot flushes of tightening mprotects. `lwk run -v` prints
//! them; `bench multiverse` projects the overhead from them (`experiment::bench::multiverse`).

use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The start-up phases of a run, in order, each with its duration.
#[derive(Debug, Clone)]
pub struct Phases {
    t0: Instant,
    last: Instant,
    list: Vec<(&'static str, Duration)>,
}

impl Phases {
    /// Starts timing at `t0`.
    pub fn new(t0: Instant) -> Self {
        Phases {
            t0,
            last: t0,
            list: Vec::new(),
        }
    }

    /// When the run began (`new`'s `t0`).
    pub fn t0(&self) -> Instant {
        self.t0
    }

    /// Ends phase `name` now.
    pub fn mark(&mut self, name: &'static str) {
        let now = Instant::now();
        self.list.push((name, now - self.last));
        self.last = now;
    }

    /// Adds phases timed elsewhere (the loader's), which end now.
    pub fn extend(&mut self, timed: &[(&'static str, Duration)]) {
        self.list.extend_from_slice(timed);
        self.last = Instant::now();
    }

    /// The phases so far (name, seconds).
    pub fn seconds(&self) -> Vec<(String, f64)> {
        seconds(&self.list)
    }
}

/// `(name, duration)` steps as `(name, seconds)`.
pub fn seconds(steps: &[(&'static str, Duration)]) -> Vec<(String, f64)> {
    steps
        .iter()
        .map(|(n, d)| (n.to_string(), d.as_secs_f64()))
        .collect()
}

/// Counts per system call number (the calls that took the doorbell exit).
pub struct PerCall(Vec<std::sync::atomic::AtomicU64>);

impl Default for PerCall {
    fn default() -> Self {
        PerCall(
            (0..multios_syscalls::MAX_NR)
                .map(|_| Default::default())
                .collect(),
        )
    }
}

impl std::fmt::Debug for PerCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.named()).finish()
    }
}

impl PerCall {
    pub fn add(&self, nr: u64) {
        if let Some(c) = self.0.get(nr as usize) {
            c.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// The non-zero counts by call name.
    pub fn named(&self) -> BTreeMap<String, u64> {
        self.0
            .iter()
            .enumerate()
            .map(|(nr, c)| (nr, c.load(std::sync::atomic::Ordering::Relaxed)))
            .filter(|&(_, c)| c > 0)
            .map(|(nr, c)| {
                let name = multios_syscalls::by_number(nr as u32)
                    .map_or_else(|| format!("syscall_{nr}"), str::to_string);
                (name, c)
            })
            .collect()
    }
}

/// KVM statistics summed over the vCPUs of a run, and the VM's at its end.
#[derive(Debug, Default)]
pub struct KvmCounters(Mutex<BTreeMap<String, u64>>);

/// The vCPU statistics kept (KVM's names): faults KVM served (`pf_fixed`: shadow entries
/// built; `pf_taken`: all faults it saw; `pf_guest`: passed to the guest; `pf_spurious`),
/// exits, exits to the VMM (`mmio_exits`: doorbells; `signal_exits`: kicks; `halt_exits`:
/// exception reports), emulated instructions, CR3 loads that flushed the TLB.
const VCPU_STATS: &[&str] = &[
    "pf_taken",
    "pf_fixed",
    "pf_guest",
    "pf_spurious",
    "pf_fast",
    "exits",
    "mmio_exits",
    "signal_exits",
    "halt_exits",
    "irq_exits",
    "insn_emulation",
    "tlb_flush",
];

/// The VM statistics kept: shadow pages zapped, leaf entries by size at the end.
const VM_STATS: &[&str] = &[
    "mmu_shadow_zapped",
    "mmu_cache_miss",
    "mmu_recycled",
    "pages_4k",
    "pages_2m",
    "remote_tlb_flush",
];

impl KvmCounters {
    /// Adds the statistics of vCPU `fd` (at the end of its thread).
    pub fn add_vcpu(&self, fd: i32) {
        self.add(fd, VCPU_STATS, true);
    }

    /// Records the VM's statistics (`fd`: the VM fd, at the end of the run).
    pub fn add_vm(&self, fd: i32) {
        self.add(fd, VM_STATS, false);
    }

    fn add(&self, fd: i32, keep: &[&str], sum: bool) {
        let Ok(values) = read_stats(fd) else {
            return;
        };
        let mut m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        for (name, v) in values.into_iter().filter(|(n, _)| keep.contains(&n.as_str())) {
            let e = m.entry(name).or_insert(0);
            *e = if sum { *e + v } else { v };
        }
    }

    pub fn snapshot(&self) -> BTreeMap<String, u64> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Reads the single-valued statistics of KVM object `fd` (name, value): the binary format of
/// Documentation/virt/kvm/api.rst, "KVM_GET_STATS_FD" (a header, descriptors, data).
fn read_stats(fd: i32) -> std::io::Result<Vec<(String, u64)>> {
    let file = std::fs::File::from(crate::sys::kvm::stats_fd(fd, crate::fds::floor())?);
    let mut out = Vec::new();
    for (name, at) in single_values(&file)? {
        let mut v = [0u8; 8];
        file.read_exact_at(&mut v, at)?;
        out.push((name, u64::from_le_bytes(v)));
    }
    Ok(out)
}

/// Where statistic `name` (single-valued) is in the statistics `file` (`faultwatch.rs` reads it
/// on its own).
pub(crate) fn stat_offset(file: &std::fs::File, name: &str) -> Option<u64> {
    single_values(file)
        .ok()?
        .into_iter()
        .find_map(|(n, at)| (n == name).then_some(at))
}

/// The single-valued statistics of a statistics file: (name, offset of the value in the file).
fn single_values(file: &std::fs::File) -> std::io::Result<Vec<(String, u64)>> {
    let mut header = [0u8; 24];
    file.read_exact_at(&mut header, 0)?;
    let word = |b: &[u8], i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    let (name_size, num_desc, desc_off, data_off) = (
        word(&header, 4) as usize,
        word(&header, 8) as usize,
        word(&header, 16) as u64,
        word(&header, 20) as u64,
    );
    let desc_len = 16 + name_size;
    let mut descs = vec![0u8; desc_len * num_desc];
    file.read_exact_at(&mut descs, desc_off)?;
    let mut out = Vec::new();
    for d in descs.chunks_exact(desc_len) {
        let size = u16::from_le_bytes([d[6], d[7]]);
        if size != 1 {
            continue; // histograms
        }
        let offset = word(d, 8) as u64;
        let name = &d[16..];
        let name = String::from_utf8_lossy(&name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())]);
        out.push((name.into_owned(), data_off + offset));
    }
    Ok(out)
}

/// What a run cost besides the guest's own code, for `lwk run -v` and the projection.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Costs {
    /// Start-up phases, seconds, in order (they add up to `startup_s`).
    pub phases: Vec<(String, f64)>,
    /// The steps of the thread that makes the VM and its memslots, seconds: concurrent with the
    /// phases from "guest memory" on (the phase "VM and memslots" is the wait for it).
    pub vm_thread: Vec<(String, f64)>,
    /// Memslots made over the window as it was used (`winslots.rs`), and their time in seconds.
    pub window_memslots: u64,
    pub window_memslot_s: f64,
    /// What the VMM does after the guest has ended, seconds: its threads stopped and joined, the
    /// VM closed (KVM frees its shadow pages and memslots), the guest memory unmapped. Not in
    /// `wall_s`, but in the process's wall time.
    pub teardown: Vec<(String, f64)>,
    /// Memslot flushes (KVM drops every shadow page table: tightening mprotects) and their time.
    pub flushes: u64,
    pub flush_s: f64,
    /// Shadow entries of one range dropped instead (a guest with one thread) and their time.
    pub invalidations: u64,
    pub invalidate_s: f64,
    /// CR3 reloads after page-table edits.
    pub reloads: u64,
    /// Calls a vCPU thread served with the proxy parked (`aside.rs`), and those for which the
    /// proxy did not park within `aside::PATIENCE`.
    pub aside: u64,
    pub aside_late: u64,
    /// Parks of the proxy because the guest was faulting, not calling (`faultwatch.rs`).
    pub fault_parks: u64,
    /// Doorbells that found their call still being served by the proxy (a call longer than the
    /// stub's spin), and the sleeps of the vCPU threads waiting for them (`machine/claimed.rs`).
    pub doorbell_waits: u64,
    pub doorbell_wait_sleeps: u64,
    /// The VMM's page faults (minor + major) before the first guest instruction, and in all.
    pub host_faults_startup: u64,
    pub host_faults: u64,
    /// KVM's statistics (see `VCPU_STATS`, `VM_STATS`).
    pub kvm: BTreeMap<String, u64>,
    /// The calls served after a doorbell exit (on the vCPU's own thread), by name.
    pub doorbell_calls: BTreeMap<String, u64>,
    /// The vCPU threads' and the proxy's scheduler times, the proxy's polling and parking
    /// (`cputime.rs`).
    pub threads: crate::cputime::Threads,
    /// What the proxy populated ahead of the guest (`populate.rs`).
    pub populate: crate::populate::Populated,
    /// The guest's areas at its end with their pages that have a host page behind them
    /// (`residency.rs`; only when the run was asked for them, `Config::count_resident`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub areas: Vec<crate::residency::Area>,
}

/// The calling process's page faults so far (minor + major).
pub fn host_faults() -> u64 {
    crate::sys::rusage_self()
        .map(|ru| (ru.ru_minflt + ru.ru_majflt).max(0) as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_add_up_in_order() {
        let mut p = Phases::new(Instant::now());
        p.mark("a");
        p.mark("b");
        let s = p.seconds();
        assert_eq!(s.iter().map(|x| x.0.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        assert!(s.iter().all(|x| x.1 >= 0.0));
    }
}
