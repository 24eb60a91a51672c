//! The memslots of the merged address space: guest-physical == host-virtual in aligned chunks of
//! [`CHUNK`] bytes, each one memslot, made the first time a mapping of the process reaches into
//! it. Measured on this KVM (docs/MULTIVERSE.md): one memslot costs about 30 µs plus 0.5 µs per
//! MiB to add and ≈ 2.5 MiB of kernel memory per GiB it covers (reverse maps for shadow paging), so
//! the user half (128 TiB) cannot be one slot set up front; chunks of 64 MiB keep an add under
//! 0.1 ms and the kernel memory proportional to what the process maps. Holes inside a chunk cost
//! nothing: the guest's tables never point there.

use crate::sys;
use kvm_ioctls::VmFd;
use multios_lwk::memory::LWK_BASE;

/// Bytes per memslot chunk.
pub const CHUNK: u64 = 64 << 20;
/// The end of user memory on x86-64 (the user half less its last page).
const TASK_SIZE: u64 = 0x7fff_ffff_f000;
/// The first memslot number used for chunks (0 and 1 are the LWK's own regions).
const FIRST_SLOT: u32 = 8;
/// KVM's memslots on x86 (KVM_CAP_NR_MEMSLOTS here: 32764).
pub const MAX_SLOTS: u32 = 32764;

/// Errors making memslots.
#[derive(Debug, thiserror::Error)]
pub enum SlotError {
    #[error("KVM_SET_USER_MEMORY_REGION for {start:#x}+{len:#x} (memslot {slot}): {source}")]
    Kvm {
        slot: u32,
        start: u64,
        len: u64,
        source: kvm_ioctls::Error,
    },
    #[error(
        "the process's mappings need more than {} memslots of {} MiB: split execution covers at most {} GiB of address space",
        MAX_SLOTS - FIRST_SLOT, CHUNK >> 20, ((MAX_SLOTS - FIRST_SLOT) as u64 * CHUNK) >> 30
    )]
    Full,
}

/// The chunks made so far: one bit per chunk of the user half, allocated up front (256 KiB) so
/// that a vCPU's thread never allocates while it serves a fault (see `maps::Reader`).
#[derive(Debug)]
pub struct Slots {
    made: Box<[u64]>,
    next: u32,
    /// Time spent in KVM_SET_USER_MEMORY_REGION, for the measurements.
    pub spent: std::time::Duration,
}

/// True when `chunk` is the LWK's own GiB (its regions have their own memslots, and its doorbell none).
fn is_lwk(chunk: u64) -> bool {
    (LWK_BASE..LWK_BASE + (1 << 30)).contains(&chunk)
}

/// Chunks in the user half.
const CHUNKS: usize = (0x8000_0000_0000u64 / CHUNK) as usize;

impl Default for Slots {
    fn default() -> Self {
        Slots {
            made: vec![0u64; CHUNKS / 64].into_boxed_slice(),
            next: 0,
            spent: std::time::Duration::ZERO,
        }
    }
}

impl Slots {
    fn is_made(&self, chunk: u64) -> bool {
        let k = (chunk / CHUNK) as usize;
        self.made[k / 64] & (1 << (k % 64)) != 0
    }

    fn mark(&mut self, chunk: u64) {
        let k = (chunk / CHUNK) as usize;
        self.made[k / 64] |= 1 << (k % 64);
    }

    /// Makes sure every chunk that `[start, end)` touches has its memslot; returns how many it made.
    pub fn cover(&mut self, vm: &VmFd, start: u64, end: u64) -> Result<usize, SlotError> {
        let mut made = 0;
        let mut c = start / CHUNK * CHUNK;
        while c < end.min(TASK_SIZE) {
            if !is_lwk(c) && !self.is_made(c) {
                let slot = FIRST_SLOT + self.next;
                if slot >= MAX_SLOTS {
                    return Err(SlotError::Full);
                }
                // The last page of the user half is not user memory (TASK_SIZE): KVM refuses it.
                let len = CHUNK.min(TASK_SIZE - c);
                let t = std::time::Instant::now();
                sys::set_slot(vm, slot, c, len).map_err(|source| SlotError::Kvm {
                    slot,
                    start: c,
                    len,
                    source,
                })?;
                self.spent += t.elapsed();
                self.next += 1;
                self.mark(c);
                made += 1;
            }
            c += CHUNK;
        }
        Ok(made)
    }

    /// Chunks (memslots) made so far.
    pub fn count(&self) -> usize {
        self.next as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lwk_gib_is_never_a_chunk() {
        assert!(is_lwk(LWK_BASE));
        assert!(is_lwk(LWK_BASE + (1 << 30) - CHUNK));
        assert!(!is_lwk(LWK_BASE - CHUNK));
        assert!(!is_lwk(LWK_BASE + (1 << 30)));
        assert_eq!(LWK_BASE % CHUNK, 0);
    }
}
