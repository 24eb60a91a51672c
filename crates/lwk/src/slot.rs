//! The slot protocol seen from the host: the helpers the proxy thread and the vCPU threads both use
//! on a vCPU's ring slot ([`multios_lwk_abi::Slot`], posted by the LSTAR stub): read the state word,
//! claim a request, read it, publish the result, and the registers a call returns with when the
//! host completes it instead of the stub.
//!
//! The states and their meaning are `multios_lwk_abi::state`'s; a host thread that wins [`claim`]
//! owns the request until it publishes a result ([`reply`]) or hands the call on.

use crate::memory::GuestMemory;
use kvm_bindings::kvm_regs;
use multios_lwk_abi::{offset, state};
use std::sync::atomic::{AtomicU32, Ordering};

/// The shared state word of a slot.
pub fn state_of(mem: &GuestMemory, slot: u64) -> &AtomicU32 {
    let p = mem.ptr(slot + offset::STATE as u64, 4) as *const AtomicU32;
    // SAFETY: the slot lies in the stub region, mapped for the whole life of `mem` (the returned
    // reference borrows it), 4-byte aligned (Slot is 64-aligned, state at 0), and is
    // only ever accessed atomically by the host.
    unsafe { &*p }
}

/// Takes a posted request (REQUEST → CLAIMED); false when another host thread took it first.
pub fn claim(st: &AtomicU32) -> bool {
    st.compare_exchange(
        state::REQUEST,
        state::CLAIMED,
        Ordering::AcqRel,
        Ordering::Acquire,
    )
    .is_ok()
}

/// The registers of a thread whose call in `slot` returns `ret`, from `regs` (its registers at
/// the doorbell): what the stub does on its way back — rax = result, rcx/rip = return address,
/// r11/rflags = the saved flags — done by the host. A nonzero `stack` replaces the stack pointer
/// (a clone's new stack); 0 keeps the caller's.
pub fn returned(mem: &GuestMemory, slot: u64, mut regs: kvm_regs, ret: i64, stack: u64) -> kvm_regs {
    let field = |o: usize| mem.read_u64(slot + o as u64);
    let (rip, rflags) = (field(offset::RIP), field(offset::RFLAGS));
    regs.rax = ret as u64;
    regs.rip = rip;
    regs.rcx = rip;
    regs.r11 = rflags;
    regs.rflags = user_flags(rflags, slot);
    regs.rsp = if stack != 0 { stack } else { field(offset::RSP) };
    regs
}

/// The flags a thread returns from its call with, from the r11 the stub saved in `slot`: the
/// `syscall` instruction's r11 is the flags, but a call through a rewritten site's thunk enters
/// the stub with r11 = the stub's own address (`rdgsbase`), which are no flags — as flags it set
/// AC, TF or DF at random in a clone's child (stress-ng's pthread stressor died of #AC in half
/// its runs). Such a thread gets the flags a user thread runs with (IF; the thunk clobbered the
/// arithmetic ones already).
///
/// The slot is the guest's to write, so its flags are held to those a user may change, as
/// Linux's sigreturn holds a signal frame's (`FIX_EFLAGS`): a forged slot with IOPL 3 (or VM, NT,
/// VIF, VIP) must not reach KVM_SET_REGS (reported 2026-11-28, `lwkX/iopl2.c`). IF is always set.
fn user_flags(r11: u64, slot: u64) -> u64 {
    if r11 == slot - multios_lwk_abi::SLOT_OFFSET as u64 {
        0x202
    } else {
        fix_flags(r11)
    }
}

/// The flags a user may set: CF, PF, AF, ZF, SF, TF, DF, OF, RF and AC (Linux's `FIX_EFLAGS`).
const USER_CHANGEABLE_FLAGS: u64 = (1 << 0)  // CF
    | (1 << 2)  // PF
    | (1 << 4)  // AF
    | (1 << 6)  // ZF
    | (1 << 7)  // SF
    | (1 << 8)  // TF
    | (1 << 10) // DF
    | (1 << 11) // OF
    | (1 << 16) // RF
    | (1 << 18); // AC

/// `flags` held to [`USER_CHANGEABLE_FLAGS`], with IF and the always-one bit 1 set: IOPL 0, and
/// never NT, VM, VIF, VIP or ID.
fn fix_flags(flags: u64) -> u64 {
    (flags & USER_CHANGEABLE_FLAGS) | 0x202
}

/// Reads the request of a claimed slot.
pub fn request(mem: &GuestMemory, slot: u64) -> (u64, [u64; 6]) {
    let nr = mem.read_u64(slot + offset::NR as u64);
    let mut a = [0u64; 6];
    for (i, v) in a.iter_mut().enumerate() {
        *v = mem.read_u64(slot + (offset::ARGS + 8 * i) as u64);
    }
    (nr, a)
}

/// Publishes a result.
pub fn reply(mem: &GuestMemory, slot: u64, ret: i64) {
    mem.write_u64(slot + offset::RET as u64, ret as u64);
    state_of(mem, slot).store(state::DONE, Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_16_slot_flags_are_held_to_what_a_user_may_change() {
        // IOPL 3, IF: IOPL dropped.
        assert_eq!(fix_flags(0x3202), 0x202);
        // NT, VM, VIF, VIP, ID and IOPL all dropped; IF set even when the slot cleared it.
        assert_eq!(
            fix_flags((1 << 14) | (1 << 17) | (1 << 19) | (1 << 20) | (1 << 21) | 0x3000),
            0x202
        );
        assert_eq!(fix_flags(0), 0x202);
        // The arithmetic flags, TF, DF, RF and AC pass.
        let user = 0x1 | 0x4 | 0x10 | 0x40 | 0x80 | 0x100 | 0x400 | 0x800 | (1 << 16) | (1 << 18);
        assert_eq!(fix_flags(user), user | 0x202);
        assert_eq!(fix_flags(u64::MAX), USER_CHANGEABLE_FLAGS | 0x202);
        // A thunk's r11 (the stub's address) gives the flags a user thread runs with.
        let slot = 0x7e00_0020_0800u64;
        assert_eq!(
            user_flags(slot - multios_lwk_abi::SLOT_OFFSET as u64, slot),
            0x202
        );
        assert_eq!(user_flags(0x3246, slot), 0x246);
    }
}
