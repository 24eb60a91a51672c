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

use crate::maps::{self, Vma};
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

impl Space {
    pub fn new(mem: Arc<GuestMemory>) -> Self {
        Space {
            tables: Tables::new(mem.clone()),
            mem,
            slots: Slots::default(),
            scratch_at: 0,
            stats: SpaceStats::default(),
        }
    }

    /// Enters `[start, end)` of mapping `v` in the tables (and its chunks in memslots).
    fn enter(&mut self, vm: &VmFd, v: &Vma, start: u64, end: u64) -> Result<bool, SpaceError> {
        let (s, e) = (start.max(v.start), end.min(v.end));
        if s >= e || in_lwk(s) || in_lwk(e - 1) {
            return Ok(false);
        }
        self.slots.cover(vm, s, e)?;
        Ok(self.tables.set(s, e, bits(v.prot))?)
    }

    /// The address-space merger: every mapping of the process up to [`EAGER_MAX`] enters the
    /// tables now, larger ones as the guest touches them.
    pub fn merge(&mut self, vm: &VmFd) -> Result<(), SpaceError> {
        let vmas = maps::read().map_err(SpaceError::Maps)?;
        for v in vmas.iter().filter(|v| v.prot != 0 && v.end - v.start <= EAGER_MAX) {
            self.enter(vm, v, v.start, v.end)?;
        }
        Ok(())
    }

    /// A guest page fault at `addr`.
    pub fn on_fault(&mut self, vm: &VmFd, addr: u64, access: &Access) -> Result<Resolution, SpaceError> {
        if in_lwk(addr) {
            return Ok(Resolution::Fault { mapped: false });
        }
        let vmas = maps::read().map_err(SpaceError::Maps)?;
        let Some(v) = maps::find(&vmas, addr) else {
            self.sync(vm, &vmas, addr)?;
            return Ok(Resolution::Fault { mapped: false });
        };
        if !allows(v.prot, access) {
            self.sync(vm, &vmas, addr)?;
            return Ok(Resolution::Fault { mapped: true });
        }
        let chunk = addr / CHUNK * CHUNK;
        if self.enter(vm, &v, chunk, chunk + CHUNK)? {
            self.stats.faults_filled += 1;
            Ok(Resolution::Filled)
        } else {
            self.stats.faults_spurious += 1;
            Ok(Resolution::Spurious)
        }
    }

    /// Rewrites the tables of the 2 MiB range around `addr` from `vmas`; true when they changed.
    fn sync(&mut self, vm: &VmFd, vmas: &[Vma], addr: u64) -> Result<bool, SpaceError> {
        let block = addr & !(PAGE_2M - 1);
        let end = block + PAGE_2M;
        if in_lwk(block) {
            return Ok(false);
        }
        let mut changed = false;
        let mut pos = block;
        let first = vmas.partition_point(|v| v.end <= block);
        for v in vmas[first..].iter().take_while(|v| v.start < end) {
            if v.start > pos {
                changed |= self.tables.set(pos, v.start, 0)?;
            }
            changed |= self.enter(vm, v, pos, end)?;
            pos = v.end.min(end);
        }
        if pos < end {
            changed |= self.tables.set(pos, end, 0)?;
        }
        Ok(changed)
    }

    /// KVM_RUN failed with EFAULT at guest-physical (== host-virtual) `gpa`: the tables gave the
    /// guest a page the host no longer backs that way. Rewrites the tables there from the maps;
    /// false when nothing changed (the host cannot back an allowed access: a bus error natively).
    pub fn on_efault(&mut self, vm: &VmFd, gpa: u64) -> Result<bool, SpaceError> {
        self.stats.efaults += 1;
        let vmas = maps::read().map_err(SpaceError::Maps)?;
        let changed = self.sync(vm, &vmas, gpa)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_rules_follow_x86() {
        let r = Access { write: false, exec: false };
        let w = Access { write: true, exec: false };
        let x = Access { write: false, exec: true };
        assert!(allows(libc::PROT_READ, &r));
        assert!(!allows(libc::PROT_READ, &w));
        assert!(!allows(libc::PROT_READ, &x));
        assert!(allows(libc::PROT_WRITE, &r), "x86 has no write-only pages");
        assert!(!allows(libc::PROT_NONE, &r));
        assert!(allows(libc::PROT_READ | libc::PROT_EXEC, &x));
    }
}
