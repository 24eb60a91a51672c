//! The floating-point control state a function shares with its caller, as a plain call does:
//! the SSE MXCSR (rounding, flush-to-zero, denormals-are-zero, exception masks and flags) and the
//! x87 control word (rounding, precision, masks) and status flags. The poster saves its own into
//! the mailbox, the guest switches to it before the function and saves the function's after it,
//! and the poster switches to that: `fesetround`, `fesetenv`, FTZ and the flags raised go both
//! ways.
//!
//! Packed in one `u64` (one mailbox word each way): MXCSR in bits 0–31, the x87 control word in
//! 32–47, the x87 status word's flags in 48–63.

/// The x87 status word's bits carried: the six exception flags and the stack fault (not the
/// condition codes or the stack top: at a call boundary the x87 stack is empty).
const FSW_FLAGS: u16 = 0x7f;

/// The calling thread's floating-point control state, packed.
pub fn save() -> u64 {
    let mut mxcsr: u32 = 0;
    let mut fcw: u16 = 0;
    let fsw: u16;
    // SAFETY: stmxcsr and fnstcw store 4 and 2 bytes at the given locals; fnstsw only writes ax.
    // None of them changes any state (the no-wait forms: a pending x87 exception is not raised).
    unsafe {
        std::arch::asm!(
            "stmxcsr [{m}]",
            "fnstcw [{c}]",
            "fnstsw ax",
            m = in(reg) &mut mxcsr,
            c = in(reg) &mut fcw,
            out("ax") fsw,
            options(nostack, preserves_flags)
        )
    };
    pack(mxcsr, fcw, fsw)
}

/// Makes `to` (from [`save`], on this machine) the calling thread's floating-point control state,
/// which is `from` now. Only at a call boundary: the x87 register stack is left empty. Loads only
/// what differs (fldenv costs ≈ 100 cycles, a save ≈ 25: both sides know their state already and
/// most calls change nothing).
pub fn switch(from: u64, to: u64) {
    if from == to {
        return;
    }
    let (mxcsr, fcw, fsw) = unpack(to);
    let (now_mxcsr, now_fcw, now_fsw) = unpack(from);
    if mxcsr != now_mxcsr {
        // SAFETY: ldmxcsr reads the 4 bytes of `mxcsr`, which came from stmxcsr on this CPU (or
        // one with the same features: the vCPU's CPUID is the host's), so its reserved bits are
        // clear and it cannot #GP.
        unsafe {
            std::arch::asm!("ldmxcsr [{}]", in(reg) &mxcsr, options(nostack, preserves_flags, readonly))
        };
    }
    if fsw != now_fsw {
        // The 28-byte x87 environment of 64-bit mode: control, status, tag (0xffff: all registers
        // empty, as the ABI has them between calls), then the last instruction and operand
        // pointers.
        let env: [u32; 7] = [fcw as u32, fsw as u32, 0xffff, 0, 0, 0, 0];
        // SAFETY: fldenv reads the 28 bytes of `env`; no x87 register is in use at a call
        // boundary, so marking them all empty loses nothing.
        unsafe {
            std::arch::asm!("fldenv [{}]", in(reg) env.as_ptr(), options(nostack, preserves_flags, readonly))
        };
    } else if fcw != now_fcw {
        // SAFETY: fldcw reads the 2 bytes of `fcw`, a control word fnstcw stored.
        unsafe { std::arch::asm!("fldcw [{}]", in(reg) &fcw, options(nostack, preserves_flags, readonly)) };
    }
}

fn pack(mxcsr: u32, fcw: u16, fsw: u16) -> u64 {
    mxcsr as u64 | (fcw as u64) << 32 | ((fsw & FSW_FLAGS) as u64) << 48
}

fn unpack(state: u64) -> (u32, u16, u16) {
    (
        state as u32,
        (state >> 32) as u16,
        (state >> 48) as u16 & FSW_FLAGS,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_keeps_each_field_and_only_the_status_flags() {
        let s = pack(0x9fc0, 0x077f, 0xb8a5);
        assert_eq!(unpack(s), (0x9fc0, 0x077f, 0x25));
    }

    #[test]
    fn switch_then_save_is_the_state_switched_to() {
        let before = save();
        // Round down in both units, flush to zero, inexact raised in both.
        let (m, c, _) = unpack(before);
        let want = pack(
            (m & !0x6000) | 0x2000 | 0x8000 | 0x20,
            (c & !0x0c00) | 0x0400,
            0x20,
        );
        for (what, to) in [
            ("everything", want),
            ("only the x87 control word", pack(m, c ^ 0x0c00, 0)),
            ("only the MXCSR", pack(m | 0x8000, c, 0)),
            ("only the x87 flags", pack(m, c, 0x01)),
        ] {
            switch(before, to);
            let got = save();
            switch(got, before);
            assert_eq!(got, to, "{what}");
            assert_eq!(save(), before, "{what}, back");
        }
    }
}
