//! The guest↔host ABI of the multios LWK: the per-vCPU system-call slot shared between the ring-3
//! LSTAR entry stub in the guest and the proxy thread (or the vCPU thread) in the VMM.
//!
//! Like uhyve's ABI crate this is deliberately small and versioned: the stub's machine code is
//! assembled against these offsets, so any change to [`Slot`] bumps [`ABI_VERSION`].
//!
//! Protocol (one request in flight per vCPU; x86 stores are seen in program order, so the guest's
//! argument stores are visible before its `state` store, and the host's `ret` store before `DONE`):
//!
//! ```text
//!  guest stub                       host (proxy thread, or vCPU thread on a doorbell exit)
//!  ----------                       ------------------------------------------------------
//!  nr, args, rip, rflags := …
//!  state := REQUEST  ─────────────▶ CAS state REQUEST → CLAIMED
//!  spin while state ∉ {DONE, EXIT…}  serve the call, ret := result
//!       ◀─────────────────────────── state := DONE        (or EXIT: "ring the doorbell",
//!                                                          or SIGNAL: "ret is ready, but a
//!                                                          signal handler runs first")
//!  on EXIT, SIGNAL or spin budget spent:
//!    write DOORBELL (MMIO exit) ────▶ the vCPU thread serves the call itself, state := DONE
//!                                     (SIGNAL: it completes the call in the vCPU's registers,
//!                                     state := IDLE, and enters the guest's handler)
//!  rax := ret, state := IDLE, jmp rcx
//! ```
//!
//! Version 2 added `SIGNAL` (the stub rings the doorbell for every state ≥ `EXIT`).
#![no_std]

/// Version of this ABI; bump on any change of [`Slot`] or of the state values.
pub const ABI_VERSION: u32 = 2;

/// Slot states.
pub mod state {
    /// No request in flight.
    pub const IDLE: u32 = 0;
    /// The guest posted a request.
    pub const REQUEST: u32 = 1;
    /// A host thread took the request.
    pub const CLAIMED: u32 = 2;
    /// `ret` holds the result.
    pub const DONE: u32 = 3;
    /// The proxy cannot serve this call (it needs the vCPU): the guest must ring the doorbell.
    pub const EXIT: u32 = 4;
    /// `ret` holds the result, and a signal is to be delivered on the way back: the guest must
    /// ring the doorbell (the vCPU thread then completes the call and enters the handler).
    pub const SIGNAL: u32 = 5;
}

/// One per vCPU: the request and its reply. Cache line 0 is written by the guest, line 1 mostly
/// by the host.
#[repr(C, align(64))]
#[derive(Debug, Default, Clone, Copy)]
pub struct Slot {
    /// One of [`state`]; accessed atomically by the host.
    pub state: u32,
    /// Spin iterations the stub waits before ringing the doorbell (set by the host).
    pub spin_budget: u32,
    /// System call number (guest `rax`).
    pub nr: u64,
    /// Arguments: rdi, rsi, rdx, r10, r8, r9.
    pub args: [u64; 6],
    /// Result returned in `rax` (negative errno on failure, like Linux).
    pub ret: i64,
    /// Guest `rcx` at the `syscall`: the return address.
    pub rip: u64,
    /// Guest `r11` at the `syscall`: the user flags.
    pub rflags: u64,
    /// Guest `rsp` at the `syscall` (needed by clone).
    pub rsp: u64,
    /// Reserved (0).
    pub served: u64,
    _pad: [u64; 3],
}

/// Byte offsets of the fields, used by the stub's RIP-relative addressing.
pub mod offset {
    pub const STATE: usize = 0;
    pub const SPIN_BUDGET: usize = 4;
    pub const NR: usize = 8;
    pub const ARGS: usize = 16;
    pub const RET: usize = 64;
    pub const RIP: usize = 72;
    pub const RFLAGS: usize = 80;
    pub const RSP: usize = 88;
}

/// Layout of the per-vCPU stub page: the stub's code at offset 0, its slot at [`SLOT_OFFSET`].
pub const SLOT_OFFSET: usize = 0x800;
/// Size of one per-vCPU stub page.
pub const STUB_PAGE: usize = 0x1000;

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{offset_of, size_of};

    #[test]
    fn offsets_match_the_struct() {
        assert_eq!(offset_of!(Slot, state), offset::STATE);
        assert_eq!(offset_of!(Slot, spin_budget), offset::SPIN_BUDGET);
        assert_eq!(offset_of!(Slot, nr), offset::NR);
        assert_eq!(offset_of!(Slot, args), offset::ARGS);
        assert_eq!(offset_of!(Slot, ret), offset::RET);
        assert_eq!(offset_of!(Slot, rip), offset::RIP);
        assert_eq!(offset_of!(Slot, rflags), offset::RFLAGS);
        assert_eq!(offset_of!(Slot, rsp), offset::RSP);
        assert_eq!(size_of::<Slot>(), 128);
        assert!(SLOT_OFFSET + size_of::<Slot>() <= STUB_PAGE);
    }
}
