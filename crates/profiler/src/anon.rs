//! New anonymous memory per process (issue #15, `--per-process`): the ranges the LWK populates at
//! map time — successful mmaps of anonymous, private, writable memory that is not a reservation
//! or a stack, and growths of the break. The ptrace backend keeps them here; the eBPF backend
//! keeps the same in the kernel (`bpf/profiler.bpf.c`, `proc_anon`), with the same filter.

use crate::raw::RawAnon;
use multios_profile::AnonMaps;
use std::collections::{BTreeMap, HashMap};

pub const NR_MMAP: u64 = 9;
pub const NR_BRK: u64 = 12;
const PROT_WRITE: u64 = 0x2;
const MAP_ANONYMOUS: u64 = 0x20;
/// MAP_SHARED, MAP_GROWSDOWN, MAP_NORESERVE, MAP_STACK, MAP_HUGETLB: not populated at map time.
const NOT_POPULATED: u64 = 0x01 | 0x100 | 0x4000 | 0x20000 | 0x40000;

/// Whether an mmap with these `prot` and `flags` that returned `ret` made a range the LWK
/// populates at map time.
pub fn populated_mmap(prot: u64, flags: u64, ret: i64) -> bool {
    !(-4095..0).contains(&ret)
        && flags & MAP_ANONYMOUS != 0
        && flags & NOT_POPULATED == 0
        && prot & PROT_WRITE != 0
}

/// Per process: its ranges so far and its last break.
#[derive(Debug, Default)]
pub struct Tracker {
    maps: BTreeMap<u32, AnonMaps>,
    brk: HashMap<u32, u64>,
}

impl Tracker {
    /// An mmap of `len` bytes by process `tgid` returned `ret`.
    pub fn mmap(&mut self, tgid: u32, len: u64, prot: u64, flags: u64, ret: i64) {
        if populated_mmap(prot, flags, ret) {
            self.maps.entry(tgid).or_default().record(len);
        }
    }

    /// A brk of process `tgid` returned the break `ret`: a growth past its last one is a range.
    pub fn brk(&mut self, tgid: u32, ret: u64) {
        if let Some(old) = self.brk.insert(tgid, ret) {
            if ret > old {
                self.maps.entry(tgid).or_default().record(ret - old);
            }
        }
    }

    /// Process `tgid` exec'd: its break starts anew.
    pub fn exec(&mut self, tgid: u32) {
        self.brk.remove(&tgid);
    }

    /// The ranges, per process.
    pub fn raw(&self) -> Vec<RawAnon> {
        self.maps
            .iter()
            .map(|(&tgid, maps)| RawAnon {
                tgid,
                maps: maps.clone(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_15_only_the_ranges_the_lwk_populates_are_kept() {
        let mut t = Tracker::default();
        let (rw, private_anon) = (0x3, 0x22);
        t.mmap(7, 1 << 20, rw, private_anon, 0x7f00_0000_0000);
        t.mmap(7, 1 << 20, rw, 0x21, 0x7f00_0000_0000); // shared
        t.mmap(7, 1 << 20, 0x1, private_anon, 0x7f00_0000_0000); // read-only
        t.mmap(7, 1 << 20, rw, private_anon | 0x4000, 0x7f00_0000_0000); // MAP_NORESERVE
        t.mmap(7, 1 << 20, rw, private_anon | 0x20000, 0x7f00_0000_0000); // MAP_STACK
        t.mmap(7, 1 << 20, rw, 0x2, 0x7f00_0000_0000); // a file
        t.mmap(7, 1 << 20, rw, private_anon, -12); // ENOMEM
                                                   // The first brk tells the break, a growth is a range, a shrink none, an exec forgets it.
        t.brk(7, 0x55_0000);
        t.brk(7, 0x57_1000);
        t.brk(7, 0x56_0000);
        t.exec(7);
        t.brk(7, 0x90_0000);
        let raw = t.raw();
        assert_eq!(raw.len(), 1);
        assert_eq!(raw[0].tgid, 7);
        assert_eq!(raw[0].maps.calls, 2);
        assert_eq!(raw[0].maps.bytes, (1 << 20) + 0x2_1000);
    }
}
