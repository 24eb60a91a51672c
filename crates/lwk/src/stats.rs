//! Per-system-call counts and times of an LWK run, and their export to the profile format.

use multios_profile::{Log2Histogram, Placement, Profile, SyscallStats};

#[derive(Debug, Clone, Default)]
struct Entry {
    count: u64,
    errors: u64,
    total_ns: u64,
    min_ns: u64,
    max_ns: u64,
    local_count: u64,
    local_ns: u64,
    /// Calls that came through the `syscall` trap, not a rewritten site.
    trapped: u64,
    hist: Log2Histogram,
}

/// Where a call was served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    Local,
    Delegated,
}

/// Statistics of one run, indexed by system call number.
#[derive(Debug, Clone)]
pub struct Stats {
    entries: Vec<Entry>,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            entries: vec![Entry::default(); multios_syscalls::MAX_NR],
        }
    }
}

impl Stats {
    /// Records one call of `nr` that took `ns` in the VMM and returned `ret`.
    pub fn record(&mut self, nr: u64, ns: u64, ret: i64, served: Served) {
        let Some(e) = self.entries.get_mut(nr as usize) else {
            return;
        };
        if e.count == 0 || ns < e.min_ns {
            e.min_ns = ns;
        }
        e.max_ns = e.max_ns.max(ns);
        e.count += 1;
        e.total_ns += ns;
        if (-4095..0).contains(&ret) {
            e.errors += 1;
        }
        if served == Served::Local {
            e.local_count += 1;
            e.local_ns += ns;
        }
        e.hist.record(ns);
    }

    /// Counts one call of `nr` that entered through the `syscall` trap (issue #14: what the
    /// rewriting of syscall sites did not reach).
    pub fn record_trap(&mut self, nr: u64) {
        if let Some(e) = self.entries.get_mut(nr as usize) {
            e.trapped += 1;
        }
    }

    /// Total calls recorded.
    pub fn calls(&self) -> u64 {
        self.entries.iter().map(|e| e.count).sum()
    }

    /// Calls that entered through the `syscall` trap.
    pub fn trapped(&self) -> u64 {
        self.entries.iter().map(|e| e.trapped).sum()
    }

    /// The calls that trapped most, (name, trapped, all calls of it), most first (at most `n`).
    pub fn top_trapped(&self, n: usize) -> Vec<(String, u64, u64)> {
        let mut v: Vec<(String, u64, u64)> = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.trapped > 0)
            .map(|(nr, e)| {
                let name = multios_syscalls::by_number(nr as u32)
                    .map_or_else(|| format!("syscall_{nr}"), str::to_string);
                (name, e.trapped, e.count)
            })
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v.truncate(n);
        v
    }

    /// Calls served by the LWK itself and calls delegated to Linux.
    pub fn local_and_delegated(&self) -> (u64, u64) {
        let local: u64 = self.entries.iter().map(|e| e.local_count).sum();
        (local, self.calls() - local)
    }

    /// The count of every call made, by name.
    pub fn counts(&self) -> std::collections::BTreeMap<String, u64> {
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.count > 0)
            .map(|(nr, e)| {
                let name = multios_syscalls::by_number(nr as u32)
                    .map_or_else(|| format!("syscall_{nr}"), str::to_string);
                (name, e.count)
            })
            .collect()
    }

    /// Count of calls of `name`.
    pub fn count_of(&self, name: &str) -> u64 {
        multios_syscalls::by_name(name)
            .and_then(|n| self.entries.get(n as usize))
            .map_or(0, |e| e.count)
    }

    /// Fills `profile.syscalls` (with the local/delegated placement) and sorts it.
    pub fn fill(&self, profile: &mut Profile) {
        for (nr, e) in self.entries.iter().enumerate().filter(|(_, e)| e.count > 0) {
            let name = multios_syscalls::by_number(nr as u32)
                .map_or_else(|| format!("syscall_{nr}"), str::to_string);
            profile.syscalls.push(SyscallStats {
                name,
                nr: nr as u32,
                count: e.count,
                total_s: e.total_ns as f64 * 1e-9,
                errors: e.errors,
                min_s: Some(e.min_ns as f64 * 1e-9),
                median_s: e.hist.quantile_ns(0.5).map(|q| q * 1e-9),
                max_s: Some(e.max_ns as f64 * 1e-9),
                hist_log2_ns: e.hist.clone(),
                gap_hist_log2_ns: Default::default(),
                placement: Some(Placement {
                    local_count: e.local_count,
                    local_total_s: e.local_ns as f64 * 1e-9,
                    delegated_count: e.count - e.local_count,
                    delegated_total_s: (e.total_ns - e.local_ns) as f64 * 1e-9,
                    trapped_count: Some(e.trapped),
                }),
            });
        }
        profile.sort();
    }
}
