//! The application window's memslots, made as the window is used (issue #13).
//!
//! One memslot over the whole window made KVM allocate and zero its reverse maps and write
//! tracking for every page of it when the VM was made — ≈ 10 MiB for the default 4 GiB window,
//! 3–7 ms of every `lwk run` here — and free them again at the end (shadow paging keeps rmaps for
//! every memslot page). The window is now covered by memslots of [`CHUNK`] bytes (ids from
//! [`FIRST_SLOT`]), each made the first time a page-table entry in it becomes present
//! ([`WindowSlots::ensure`], from `GuestMemory::set_chunk`): a program that uses a few MiB makes
//! three — the window's first chunk (the program and its heap), the one above the heap's 1 GiB
//! reserve (the libraries, placed low for the rewriter) and its last (the stack and the mappings
//! below it). The chunks are large because
//! every memslot update also waits for an SRCU grace period, which KVM's workqueue drives: ≈ 0.1
//! ms on a quiet machine, 3–15 ms each when every CPU is busy (128 MiB chunks made `true` pay 4 of
//! them; the old single memslot was one update). Making a memslot changes nothing KVM has built (no shadow page is dropped), and
//! one that already exists with the same range is a no-op for KVM, so two threads that make the
//! same one race harmlessly: KVM serializes them, and the second returns only once the first has
//! made it. The guest cannot reach a chunk before its memslot exists: it is made before the entry
//! that maps it is written.
//!
//! Before the VM exists (the VM is made on another thread while the program loads) chunks are only
//! marked; [`WindowSlots::attach`] makes the marked ones when the VM is there — the same for a
//! forked child's new VM, which so gets every memslot its parent had.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering::SeqCst};
use std::time::Instant;

/// Bytes of window per memslot.
pub const CHUNK: u64 = 512 << 20;
/// The id of the first chunk's memslot (0–2: the LWK's pages, 7: the scratch slot of
/// `Shadow::flush`).
pub const FIRST_SLOT: u32 = 8;

/// The memslots of the window `[base, end)` (the thunk page and the application window): chunks of
/// [`CHUNK`] bytes from `base`, the last one taking the remainder (with the default window, the
/// stack's top pages share the last chunk with the mappings below it).
#[derive(Debug)]
pub struct WindowSlots {
    base: u64,
    end: u64,
    /// The VM to make them in (-1: none yet).
    vm_fd: AtomicI32,
    /// Chunk k is used (its memslot is wanted).
    marked: Vec<AtomicBool>,
    /// Chunk k's memslot exists in the current VM.
    made: Vec<AtomicBool>,
    /// Memslots made and their time (ns), for `costs.rs`.
    count: AtomicU64,
    ns: AtomicU64,
}

impl WindowSlots {
    /// The memslots of `[base, end)`, none made yet.
    pub fn new(base: u64, end: u64) -> Self {
        let n = if end > base {
            ((end - base) / CHUNK).max(1) as usize
        } else {
            0
        };
        WindowSlots {
            base,
            end,
            vm_fd: AtomicI32::new(-1),
            marked: (0..n).map(|_| AtomicBool::new(false)).collect(),
            made: (0..n).map(|_| AtomicBool::new(false)).collect(),
            count: AtomicU64::new(0),
            ns: AtomicU64::new(0),
        }
    }

    /// The chunk holding `a` (inside the window).
    fn index(&self, a: u64) -> usize {
        (((a - self.base) / CHUNK) as usize).min(self.marked.len() - 1)
    }

    /// Chunk `k`'s range.
    fn bounds(&self, k: usize) -> (u64, u64) {
        let from = self.base + k as u64 * CHUNK;
        let to = if k + 1 == self.marked.len() {
            self.end
        } else {
            from + CHUNK
        };
        (from, to)
    }

    /// The chunks `[a, b)` touches (clipped to the window).
    fn chunks(&self, a: u64, b: u64) -> std::ops::Range<usize> {
        let (a, b) = (a.max(self.base), b.min(self.end));
        if a >= b {
            return 0..0;
        }
        self.index(a)..self.index(b - 1) + 1
    }

    /// Makes sure the memslots over `[a, b)` exist before the guest may reach those pages (when
    /// the VM does not exist yet, [`Self::attach`] makes them).
    pub fn ensure(&self, a: u64, b: u64) {
        for k in self.chunks(a, b) {
            if self.made[k].load(SeqCst) {
                continue;
            }
            self.marked[k].store(true, SeqCst);
            let fd = self.vm_fd.load(SeqCst);
            if fd >= 0 {
                if let Err(e) = self.make(fd, k) {
                    // The guest then stops at its first access there ("access to unmapped
                    // memory", with the address).
                    crate::diag!("multios lwk: {e}");
                }
            }
        }
    }

    /// The VM `vm_fd` now exists (a new one, or a forked child's): makes the memslot of every
    /// chunk used so far.
    pub fn attach(&self, vm_fd: i32) -> std::io::Result<()> {
        for m in &self.made {
            m.store(false, SeqCst);
        }
        self.vm_fd.store(vm_fd, SeqCst);
        for k in 0..self.marked.len() {
            if self.marked[k].load(SeqCst) {
                self.make(vm_fd, k)?;
            }
        }
        Ok(())
    }

    /// Makes chunk `k`'s memslot in VM `fd`.
    fn make(&self, fd: i32, k: usize) -> std::io::Result<()> {
        let t0 = Instant::now();
        let (start, end) = self.bounds(k);
        let len = end - start;
        crate::sys::kvm::set_memslot(fd, FIRST_SLOT + k as u32, start, len, start).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("the memslot of guest memory {start:#x}+{len:#x}: {e}"),
            )
        })?;
        // Counted once per chunk and VM (a thread that raced another one here found it made).
        if !self.made[k].swap(true, SeqCst) {
            self.count.fetch_add(1, SeqCst);
            self.ns.fetch_add(t0.elapsed().as_nanos() as u64, SeqCst);
        }
        Ok(())
    }

    /// Memslots made so far (in every VM of this process; a chunk made by two racing threads
    /// counts once) and their total time in seconds.
    pub fn made_so_far(&self) -> (u64, f64) {
        (self.count.load(SeqCst), self.ns.load(SeqCst) as f64 * 1e-9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_exactly_the_range_clipped_to_the_window() {
        let base = 0x20_0000;
        let w = WindowSlots::new(base, base + 3 * CHUNK + 0x40_0000);
        assert_eq!(w.marked.len(), 3);
        assert_eq!(w.chunks(0, base), 0..0);
        assert_eq!(w.chunks(base, base + 1), 0..1);
        assert_eq!(w.chunks(base + CHUNK - 1, base + CHUNK + 1), 0..2);
        assert_eq!(w.chunks(base + CHUNK, base + 2 * CHUNK), 1..2);
        assert_eq!(w.chunks(0, u64::MAX), 0..3);
        assert_eq!(w.chunks(base + 3 * CHUNK, u64::MAX), 2..3);
        assert_eq!(w.chunks(base + 3 * CHUNK + 0x40_0000, u64::MAX), 0..0);
        // The chunks tile the window; the last takes the remainder.
        assert_eq!(w.bounds(0), (base, base + CHUNK));
        assert_eq!(w.bounds(2), (base + 2 * CHUNK, base + 3 * CHUNK + 0x40_0000));
        // The default window (thunk page + 4 GiB): 8 chunks, the stack's top in the last.
        let w = WindowSlots::new(base, 0x40_0000 + (4 << 30));
        assert_eq!(w.marked.len(), 8);
        assert_eq!(w.chunks(0x40_0000 + (4 << 30) - 4096, u64::MAX), 7..8);
        // A window smaller than a chunk is one chunk; an empty one has none.
        assert_eq!(WindowSlots::new(base, base + 0x20_0000).marked.len(), 1);
        assert_eq!(WindowSlots::new(base, base).marked.len(), 0);
    }

    #[test]
    fn chunks_used_before_the_vm_are_marked_for_it() {
        let base = 0x20_0000;
        let w = WindowSlots::new(base, base + 4 * CHUNK);
        w.ensure(base + CHUNK + 5, base + CHUNK + 6);
        w.ensure(base + 3 * CHUNK, base + 4 * CHUNK);
        let marked: Vec<bool> = w.marked.iter().map(|m| m.load(SeqCst)).collect();
        assert_eq!(marked, [false, true, false, true]);
        assert!(w.made.iter().all(|m| !m.load(SeqCst)));
    }
}
