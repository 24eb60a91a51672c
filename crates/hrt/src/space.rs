//! The merged address space (Multiverse §III "state superpositions"): the guest sees every mapping
//! of the process at its own address, with the host's protection, and follows the process's maps
//! as they change — from any thread, at any time, without the process telling it.
//!
//! * Memslots: guest-physical == host-virtual in 64 MiB chunks (`slots.rs`), made when a mapping
//!   first reaches a chunk.
//! * Guest page tables (`tables.rs`): filled from /proc/self/maps — for every small mapping when
//!   the space is merged, then on demand when the guest faults on an address the tables do not map
//!   yet (the part of the mapping inside the faulting chunk). A fault the host's mapping does not
//!   allow is the function's fault.
//! * Invalidation: when the process unmaps memory or takes access away, Linux's MMU notifier makes
//!   KVM drop its shadow entries for those host pages; the guest's next access then reaches KVM,
//!   which finds no host page to back it and fails KVM_RUN with EFAULT at that address
//!   ([`Space::on_efault`]). The tables of that 2 MiB range are then rewritten from the maps and
//!   KVM's shadow tables are dropped (a scratch memslot moved), and the access runs again: it
//!   faults in the guest as it would natively, or proceeds if a new mapping is there.

use crate::maps::{Reader, Vma};
use crate::slots::{SlotError, Slots, CHUNK};
use crate::tables::{bits, TableError, Tables};
use kvm_ioctls::VmFd;
use multios_lwk::memory::{GuestMemory, DOORBELL_BASE, LWK_BASE};
use std::sync::Arc;

const PAGE_2M: u64 = 2 << 20;
/// Mappings at most this large are entered in the tables when the space is merged; larger ones
/// (heap reservations, big buffers) chunk by chunk as the guest touches them.
const EAGER_MAX: u64 = 256 << 20;
/// The scratch memslot whose moves make KVM drop its shadow page tables.
const SCRATCH_SLOT: u32 = 2;

/// Errors of the merged address space.
#[derive(Debug, thiserror::Error)]
pub enum SpaceError {
    #[error("reading /proc/self/maps: {0}")]
    Maps(std::io::Error),
    #[error(transparent)]
    Slot(#[from] SlotError),
    #[error(transparent)]
    Table(#[from] TableError),
}

/// What a guest page fault was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// The tables now map the page: run the access again.
    Filled,
    /// The tables already allowed it (a stale shadow): run it again after a CR3 reload.
    Spurious,
    /// The process's mappings forbid it: the function faulted (true: a mapping is there).
    Fault { mapped: bool },
}

/// Counters, for `bench hrt` and the docs.
#[derive(Debug, Clone, Copy, Default)]
pub struct SpaceStats {
    pub faults_filled: u64,
    pub faults_spurious: u64,
    pub efaults: u64,
    pub flushes: u64,
    pub memslots: usize,
    pub tables: u64,
    pub memslot_ns: u64,
}

/// The merged address space of this process and its VM.
pub struct Space {
    mem: Arc<GuestMemory>,
    reader: Reader,
    /// The process's mappings as last read, with room for `vm.max_map_count` of them reserved up
    /// front (a vCPU's thread never allocates while it serves a fault: see `maps::Reader`).
    vmas: Vec<Vma>,
    /// Ranges whose tables disagree with the maps, found by [`Space::resync`] (capacity reserved).
    stale: Vec<(u64, u64)>,
    slots: Slots,
    tables: Tables,
    scratch_at: u64,
    stats: SpaceStats,
}

/// A page-fault error code's meaning.
pub struct Access {
    pub write: bool,
    pub exec: bool,
}

fn allows(prot: i32, a: &Access) -> bool {
    if a.write {
        prot & libc::PROT_WRITE != 0
    } else if a.exec {
        prot & libc::PROT_EXEC != 0
    } else {
        prot & (libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC) != 0
    }
}

fn in_lwk(addr: u64) -> bool {
    (LWK_BASE..LWK_BASE + (1 << 30)).contains(&addr)
}

/// Linux's default vm.max_map_count, rounded up.
const MAX_MAPS: usize = 65536;
const STALE_MAX: usize = 4096;

impl Space {
    pub fn new(mem: Arc<GuestMemory>) -> Self {
        Space {
            tables: Tables::new(mem.clone()),
            reader: Reader::default(),
            vmas: Vec::with_capacity(MAX_MAPS),
            stale: Vec::with_capacity(STALE_MAX),
            mem,
            slots: Slots::default(),
            scratch_at: 0,
            stats: SpaceStats::default(),
        }
    }

    /// Reads the process's mappings into `vmas` (the first [`MAX_MAPS`]).
    fn refresh(&mut self) -> Result<(), SpaceError> {
        let Space { reader, vmas, .. } = self;
        vmas.clear();
        reader
            .for_each_from(0, |v| {
                vmas.push(v);
                vmas.len() < MAX_MAPS
            })
            .map_err(SpaceError::Maps)
    }

    /// The address-space merger: every mapping of the process up to [`EAGER_MAX`] enters the
    /// tables now, larger ones as the guest touches them.
    pub fn merge(&mut self, vm: &VmFd) -> Result<(), SpaceError> {
        self.refresh()?;
        let Space {
            vmas, slots, tables, ..
        } = self;
        for v in vmas
            .iter()
            .filter(|v| v.prot != 0 && v.end - v.start <= EAGER_MAX)
        {
            enter(slots, tables, vm, v, v.start, v.end)?;
        }
        Ok(())
    }

    /// A guest page fault at `addr`.
    pub fn on_fault(&mut self, vm: &VmFd, addr: u64, access: &Access) -> Result<Resolution, SpaceError> {
        if in_lwk(addr) {
            return Ok(Resolution::Fault { mapped: false });
        }
        let block = addr & !(PAGE_2M - 1);
        let found = self.reader.find(addr).map_err(SpaceError::Maps)?;
        let Some(v) = found.filter(|v| allows(v.prot, access)) else {
            // The function's fault: the tables of the block are made to say what the host does.
            self.refresh()?;
            self.sync(vm, block, block + PAGE_2M)?;
            return Ok(Resolution::Fault {
                mapped: found.is_some(),
            });
        };
        // The faulting mapping's part of the chunk, and every other mapping there: neighbours
        // mapped together (a library's segments, a thread's stack and its guard) then cost one
        // fault, not one each.
        let chunk = addr / CHUNK * CHUNK;
        let mut changed = enter(&mut self.slots, &mut self.tables, vm, &v, chunk, chunk + CHUNK)?;
        let Space {
            reader,
            slots,
            tables,
            ..
        } = self;
        let mut err = None;
        reader
            .for_each_from(chunk, |w| {
                if w.start >= chunk + CHUNK {
                    return false;
                }
                if w.prot != 0 && w != v {
                    match enter(slots, tables, vm, &w, chunk, chunk + CHUNK) {
                        Ok(c) => changed |= c,
                        Err(e) => {
                            err = Some(e);
                            return false;
                        }
                    }
                }
                true
            })
            .map_err(SpaceError::Maps)?;
        if let Some(e) = err {
            return Err(e);
        }
        if changed {
            self.stats.faults_filled += 1;
            Ok(Resolution::Filled)
        } else {
            self.stats.faults_spurious += 1;
            Ok(Resolution::Spurious)
        }
    }

    /// The function itself mapped memory at `addr` (a forwarded mmap, mremap or brk): enters the
    /// mapping now, so that its first touch does not fault (≈ 80 µs here, through emulated ring 0).
    pub fn prefill(&mut self, vm: &VmFd, addr: u64) -> Result<(), SpaceError> {
        if in_lwk(addr) {
            return Ok(());
        }
        if let Some(v) = self.reader.find(addr).map_err(SpaceError::Maps)? {
            let (s, e) = if v.end - v.start <= EAGER_MAX {
                (v.start, v.end)
            } else {
                let chunk = addr / CHUNK * CHUNK;
                (chunk, chunk + CHUNK)
            };
            enter(&mut self.slots, &mut self.tables, vm, &v, s, e)?;
        }
        Ok(())
    }

    /// The function itself unmapped or changed `[start, start+len)` (a forwarded munmap,
    /// mprotect or mremap): rewrites the tables there from the maps now, so that its next access
    /// faults in the guest (or proceeds) without an EFAULT resync of the whole space.
    pub fn resync_range(&mut self, vm: &VmFd, start: u64, len: u64) -> Result<(), SpaceError> {
        let s = start & !4095;
        let e = start.saturating_add(len).saturating_add(4095) & !4095;
        if len == 0 || e > crate::maps::USER_END {
            return Ok(());
        }
        self.refresh()?;
        self.sync(vm, s, e)?;
        Ok(())
    }

    /// Rewrites the tables of `[start, end)` from `vmas`; true when they changed.
    fn sync(&mut self, vm: &VmFd, start: u64, end: u64) -> Result<bool, SpaceError> {
        if in_lwk(start) || in_lwk(end - 1) {
            return Ok(false);
        }
        let Space {
            vmas, slots, tables, ..
        } = self;
        let mut changed = false;
        let mut pos = start;
        let first = vmas.partition_point(|v| v.end <= start);
        for v in vmas[first..].iter().take_while(|v| v.start < end) {
            if v.start > pos {
                changed |= tables.set(pos, v.start, 0)?;
            }
            changed |= enter(slots, tables, vm, v, pos, end)?;
            pos = v.end.min(end);
        }
        if pos < end {
            changed |= tables.set(pos, end, 0)?;
        }
        Ok(changed)
    }

    /// Rewrites every range of the tables that disagrees with the process's mappings now
    /// (memory unmapped, access changed since it entered the tables); true when any did.
    pub fn resync(&mut self, vm: &VmFd) -> Result<bool, SpaceError> {
        self.refresh()?;
        let mut changed = false;
        loop {
            self.stale.clear();
            let Space {
                vmas, tables, stale, ..
            } = self;
            tables.leaves(|start, size, b| {
                if !agrees(vmas, start, start + size, b) {
                    stale.push((start, start + size));
                }
                stale.len() < STALE_MAX
            });
            let full = self.stale.len() == STALE_MAX;
            for k in 0..self.stale.len() {
                let (s, e) = self.stale[k];
                changed |= self.sync(vm, s, e)?;
            }
            if !full || !changed {
                return Ok(changed);
            }
        }
    }

    /// KVM_RUN failed with EFAULT: the tables gave the guest a page the host no longer backs
    /// that way (this KVM does not say which: KVM_EXIT_MEMORY_FAULT is not filled on this path).
    /// Rewrites every stale range of the tables from the maps and drops KVM's shadow tables; false
    /// when nothing was stale (the host cannot back an allowed access: a bus error natively).
    pub fn on_efault(&mut self, vm: &VmFd) -> Result<bool, SpaceError> {
        self.stats.efaults += 1;
        let changed = self.resync(vm)?;
        if changed {
            self.flush(vm);
        }
        Ok(changed)
    }

    /// Makes KVM drop every shadow page table (moving a scratch memslot does, on x86), so that no
    /// vCPU keeps access the tables took away.
    pub fn flush(&mut self, vm: &VmFd) {
        // Two pages in the doorbell's 2 MiB past the vCPUs' doorbells: no memslot, never accessed.
        let (a, b) = (DOORBELL_BASE + (1 << 20), DOORBELL_BASE + (1 << 20) + 4096);
        let to = if self.scratch_at == a { b } else { a };
        let host = self.mem.sys.base + self.mem.sys.len - 4096;
        let region = kvm_bindings::kvm_userspace_memory_region {
            slot: SCRATCH_SLOT,
            flags: 0,
            guest_phys_addr: to,
            memory_size: 4096,
            userspace_addr: host,
        };
        // SAFETY: the scratch slot is backed by the last page of the LWK's system page, which
        // nothing uses and which lives as long as the VM; no guest table maps its guest address.
        if unsafe { vm.set_user_memory_region(region) }.is_ok() {
            self.scratch_at = to;
            self.stats.flushes += 1;
        }
        self.mem.shadow.bump();
    }

    /// The tables changed: every vCPU reloads its CR3 before it next runs.
    pub fn bump(&self) {
        self.mem.shadow.bump();
    }

    pub fn stats(&self) -> SpaceStats {
        SpaceStats {
            memslots: self.slots.count(),
            tables: self.tables.tables,
            memslot_ns: self.slots.spent.as_nanos() as u64,
            ..self.stats
        }
    }

    /// The bits the tables give `addr` (tests).
    pub fn bits_at(&self, addr: u64) -> u64 {
        self.tables.get(addr)
    }
}

/// True when the mappings in `vmas` give all of `[start, end)` exactly `bits_now`.
fn agrees(vmas: &[Vma], start: u64, end: u64, bits_now: u64) -> bool {
    let mut pos = start;
    let first = vmas.partition_point(|v| v.end <= start);
    for v in vmas[first..].iter().take_while(|v| v.start < end) {
        if v.start > pos || bits(v.prot) != bits_now {
            return false;
        }
        pos = v.end;
    }
    pos >= end
}

/// Enters `[start, end)` of mapping `v` in the tables (and its chunks in memslots).
fn enter(
    slots: &mut Slots,
    tables: &mut Tables,
    vm: &VmFd,
    v: &Vma,
    start: u64,
    end: u64,
) -> Result<bool, SpaceError> {
    let (s, e) = (start.max(v.start), end.min(v.end));
    if s >= e || in_lwk(s) || in_lwk(e - 1) {
        return Ok(false);
    }
    slots.cover(vm, s, e)?;
    Ok(tables.set(s, e, bits(v.prot))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_rules_follow_x86() {
        let r = Access {
            write: false,
            exec: false,
        };
        let w = Access {
            write: true,
            exec: false,
        };
        let x = Access {
            write: false,
            exec: true,
        };
        assert!(allows(libc::PROT_READ, &r));
        assert!(!allows(libc::PROT_READ, &w));
        assert!(!allows(libc::PROT_READ, &x));
        assert!(allows(libc::PROT_WRITE, &r), "x86 has no write-only pages");
        assert!(!allows(libc::PROT_NONE, &r));
        assert!(allows(libc::PROT_READ | libc::PROT_EXEC, &x));
    }
}
