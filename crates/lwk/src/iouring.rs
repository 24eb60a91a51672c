//! The state of one io_uring ring the guest set up (issue #14): where its memory is and what
//! the LWK needs to check its submissions. Served by `syscall/uring.rs`.

use crate::memory::GuestMemory;
use crate::sys::SharedRegion;
use std::sync::Mutex;

/// Where a ring's memory lives.
#[derive(Debug)]
pub(crate) enum Backing {
    /// Shared memory of the VMM, aliased into the window when the guest maps it.
    Vmm(SharedRegion),
    /// Guest memory the guest gave with its own IORING_SETUP_NO_MMAP.
    Guest(u64),
}

/// One ring the guest set up.
#[derive(Debug)]
pub(crate) struct Ring {
    /// The ring fd at setup (to forget rings whose fd has been closed).
    pub(crate) fd: i32,
    pub(crate) rings: Backing,
    pub(crate) guest_sqes: Backing,
    /// The entry array the kernel reads: only the VMM writes it.
    pub(crate) kernel_sqes: SharedRegion,
    pub(crate) sqe_size: usize,
    pub(crate) sq_entries: u32,
    /// Offsets in the ring memory: SQ head, SQ tail, SQ index array (None: NO_SQARRAY).
    pub(crate) sq_head: u64,
    pub(crate) sq_tail: u64,
    pub(crate) sq_array: Option<u64>,
    /// SINGLE_ISSUER/DEFER_TASKRUN: one task submits, so its calls are served on the guest
    /// thread's own vCPU thread.
    pub(crate) single_issuer: bool,
    /// Per entry slot, the iovec array copied for its READV/WRITEV (kept until the slot is
    /// filled again; the kernel imports it when it takes the entry). Also serializes submissions.
    pub(crate) slots: Mutex<Vec<Vec<u64>>>,
}

impl Backing {
    pub(crate) fn u32_at(&self, mem: &GuestMemory, off: u64) -> u32 {
        match self {
            Backing::Vmm(r) => r.load_u32(off as usize),
            Backing::Guest(base) => {
                let a = base.saturating_add(off);
                if !mem.in_app(a, 4) {
                    return 0;
                }
                let mut b = [0u8; 4];
                mem.read(a, &mut b);
                u32::from_le_bytes(b)
            }
        }
    }

    pub(crate) fn read(&self, mem: &GuestMemory, off: u64, buf: &mut [u8]) {
        match self {
            Backing::Vmm(r) => r.read(off as usize, buf),
            Backing::Guest(base) => {
                let a = base.saturating_add(off);
                if mem.in_app(a, buf.len() as u64) {
                    mem.read(a, buf);
                } else {
                    buf.fill(0);
                }
            }
        }
    }
}
