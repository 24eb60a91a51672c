//! The guest's only code: the ring-3 LSTAR entry stub and the ring-0 exception reporters, plus
//! the descriptor tables they need. All of it is written into guest memory before the first run.

use crate::memory::{sys_page, GuestMemory, DOORBELL_BASE, STUB_BASE, SYS_BASE};
use multios_lwk_abi::{SLOT_OFFSET, STUB_PAGE};

/// The LSTAR stub (ring 3; position independent: it addresses its slot at +0x800 and its
/// doorbell at +2 MiB RIP-relatively, so each vCPU gets a plain copy in its own stub page).
///
/// ```text
///  0: cmp $158,%eax; jne 18; cmp $0x1002,%edi; jne 18   arch_prctl(ARCH_SET_FS, rsi)?
///  f: wrfsbase %rsi; xor %eax,%eax; jmp *%rcx             done in ring 3, no round trip
/// 18: mov %rax,nr; mov %rdi..%r9,args[0..6]; mov %rcx,rip; mov %r11,rflags; mov %rsp,rsp
/// 5e: movl $REQUEST,state
/// 68: retry: mov spin_budget,%ecx
/// 6e: spin:  mov state,%eax; cmp $DONE; je done; cmp $EXIT; jae bell; pause; dec %ecx; jnz spin
/// 84: bell:  mov %eax,DOORBELL(%rip)   MMIO exit: the vCPU thread serves the call
/// 8a:        jmp retry
/// 8c: done:  mov ret,%rax; movl $IDLE,state; mov rip,%rcx; mov rflags,%r11; jmp *%rcx
/// ```
/// (Arithmetic flags are not restored: x86-64 syscall wrappers declare them clobbered; SFMASK is
/// 0 so DF, AC and TF are untouched.)
pub const LSTAR_STUB: [u8; 173] = [
    0x3d, 0x9e, 0x00, 0x00, 0x00, 0x75, 0x11, 0x81, 0xff, 0x02, 0x10, 0x00, 0x00, 0x75, 0x09, 0xf3, //
    0x48, 0x0f, 0xae, 0xd6, 0x31, 0xc0, 0xff, 0xe1, 0x48, 0x89, 0x05, 0xe9, 0x07, 0x00, 0x00, 0x48, //
    0x89, 0x3d, 0xea, 0x07, 0x00, 0x00, 0x48, 0x89, 0x35, 0xeb, 0x07, 0x00, 0x00, 0x48, 0x89, 0x15, //
    0xec, 0x07, 0x00, 0x00, 0x4c, 0x89, 0x15, 0xed, 0x07, 0x00, 0x00, 0x4c, 0x89, 0x05, 0xee, 0x07, //
    0x00, 0x00, 0x4c, 0x89, 0x0d, 0xef, 0x07, 0x00, 0x00, 0x48, 0x89, 0x0d, 0xf8, 0x07, 0x00, 0x00, //
    0x4c, 0x89, 0x1d, 0xf9, 0x07, 0x00, 0x00, 0x48, 0x89, 0x25, 0xfa, 0x07, 0x00, 0x00, 0xc7, 0x05, //
    0x98, 0x07, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x8b, 0x0d, 0x96, 0x07, 0x00, 0x00, 0x8b, 0x05, //
    0x8c, 0x07, 0x00, 0x00, 0x83, 0xf8, 0x03, 0x74, 0x13, 0x83, 0xf8, 0x04, 0x73, 0x06, 0xf3, 0x90, //
    0xff, 0xc9, 0x75, 0xea, 0x89, 0x05, 0x76, 0xff, 0x1f, 0x00, 0xeb, 0xdc, 0x48, 0x8b, 0x05, 0xad, //
    0x07, 0x00, 0x00, 0xc7, 0x05, 0x63, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x48, 0x8b, 0x0d, //
    0xa4, 0x07, 0x00, 0x00, 0x4c, 0x8b, 0x1d, 0xa5, 0x07, 0x00, 0x00, 0xff, 0xe1,
];

/// Guest address of vCPU `i`'s stub (its LSTAR).
pub fn stub_addr(i: u64) -> u64 {
    STUB_BASE + i * STUB_PAGE as u64
}

/// Guest address of vCPU `i`'s ring slot.
pub fn slot_addr(i: u64) -> u64 {
    stub_addr(i) + SLOT_OFFSET as u64
}

/// Guest address vCPU `i` writes to ring its doorbell.
pub fn doorbell_addr(i: u64) -> u64 {
    DOORBELL_BASE + i * STUB_PAGE as u64
}

/// Vectors that push an error code.
fn has_error_code(v: u8) -> bool {
    matches!(v, 8 | 10..=14 | 17 | 21 | 29 | 30)
}

/// Bytes per exception handler.
const HANDLER_SIZE: u64 = 8;

/// Segment selectors (GDT index * 8 | RPL).
pub mod sel {
    pub const KERNEL_CS: u16 = 0x08;
    pub const KERNEL_DS: u16 = 0x10;
    pub const USER_DS: u16 = 0x18 | 3;
    pub const USER_CS: u16 = 0x20 | 3;
    pub const TSS: u16 = 0x28;
}

/// Writes the stub for vCPU `i` with a zeroed slot.
pub fn write_stub(mem: &GuestMemory, i: u64, spin_budget: u32) {
    let mut page = vec![0u8; STUB_PAGE];
    page[..LSTAR_STUB.len()].copy_from_slice(&LSTAR_STUB);
    page[SLOT_OFFSET + multios_lwk_abi::offset::SPIN_BUDGET..][..4]
        .copy_from_slice(&spin_budget.to_le_bytes());
    mem.write(stub_addr(i), &page);
}

/// Writes the GDT, the IDT and the ring-0 exception reporters (shared by all vCPUs).
///
/// Each reporter is `push $0` (when the CPU pushes no error code), `push $vector`, `hlt`: the HLT
/// exit hands the frame `[vector, error, rip, cs, rflags, rsp, ss]` at the guest's RSP to the VMM.
/// Being ring-0 code it is emulated here (slow), which is fine: it only runs when the guest dies.
pub fn write_tables(mem: &GuestMemory) {
    let gdt: [u64; 5] = [
        0,
        0x00af_9a00_0000_ffff, // kernel code, 64-bit
        0x00cf_9200_0000_ffff, // kernel data
        0x00cf_f200_0000_ffff, // user data, DPL 3
        0x00af_fa00_0000_ffff, // user code, 64-bit, DPL 3
    ];
    for (k, d) in gdt.iter().enumerate() {
        mem.write_u64(SYS_BASE + sys_page::GDT + 8 * k as u64, *d);
    }
    // TSS descriptor (0x28, 16 bytes) for vCPU 0's TSS; each vCPU's TR base is set via sregs.
    let (lo, hi) = tss_descriptor(tss_addr(0));
    mem.write_u64(SYS_BASE + sys_page::GDT + 0x28, lo);
    mem.write_u64(SYS_BASE + sys_page::GDT + 0x30, hi);

    for v in 0..32u8 {
        let h = SYS_BASE + sys_page::HANDLERS + v as u64 * HANDLER_SIZE;
        let mut code = Vec::new();
        if !has_error_code(v) {
            code.extend_from_slice(&[0x6a, 0x00]); // push $0
        }
        code.extend_from_slice(&[0x6a, v, 0xf4, 0xeb, 0xfe]); // push $v; hlt; jmp .
        mem.write(h, &code);
        let gate_lo =
            (h & 0xffff) | ((sel::KERNEL_CS as u64) << 16) | (0x8e << 40) | (((h >> 16) & 0xffff) << 48);
        mem.write_u64(SYS_BASE + sys_page::IDT + 16 * v as u64, gate_lo);
        mem.write_u64(SYS_BASE + sys_page::IDT + 16 * v as u64 + 8, h >> 32);
    }
}

/// Writes vCPU `i`'s TSS (RSP0 = its ring-0 stack) and returns its address.
pub fn write_tss(mem: &GuestMemory, i: u64) -> u64 {
    let tss = tss_addr(i);
    mem.write(tss, &[0u8; 104]);
    mem.write_u64(tss + 4, ring0_stack_top(i));
    // I/O map base beyond the limit: no I/O permission bitmap.
    mem.write(tss + 102, &104u16.to_le_bytes());
    tss
}

pub fn tss_addr(i: u64) -> u64 {
    SYS_BASE + sys_page::TSS + 128 * i
}

pub fn ring0_stack_top(i: u64) -> u64 {
    SYS_BASE + sys_page::RING0_STACKS + (i + 1) * 0x1000
}

fn tss_descriptor(base: u64) -> (u64, u64) {
    let limit = 103u64;
    let lo = (limit & 0xffff)
        | ((base & 0xff_ffff) << 16)
        | (0x89 << 40) // present, 64-bit TSS (available)
        | (((limit >> 16) & 0xf) << 48)
        | (((base >> 24) & 0xff) << 56);
    (lo, base >> 32)
}

/// What an exception reporter left on its ring-0 stack: the vector and error code it pushed over
/// the frame the CPU pushed.
#[derive(Debug, Clone, Copy)]
pub struct ExceptionFrame {
    pub vector: u64,
    pub error: u64,
    pub rip: u64,
    pub cs: u64,
    pub rflags: u64,
    pub rsp: u64,
}

impl ExceptionFrame {
    /// Reads the frame at `rsp`, the stack pointer of a vCPU halted in a reporter:
    /// `[vector, error, rip, cs, rflags, rsp, ss]`.
    pub fn read(mem: &GuestMemory, rsp: u64) -> ExceptionFrame {
        let word = |k: u64| mem.read_u64(rsp + 8 * k);
        ExceptionFrame {
            vector: word(0),
            error: word(1),
            rip: word(2),
            cs: word(3),
            rflags: word(4),
            rsp: word(5),
        }
    }

    /// True when the exception interrupted ring-3 code.
    pub fn from_user(&self) -> bool {
        self.cs & 3 == 3
    }
}

/// The exception's name, for fault reports.
pub fn exception_name(v: u64) -> &'static str {
    match v {
        0 => "divide error (#DE)",
        1 => "debug (#DB)",
        3 => "breakpoint (#BP)",
        4 => "overflow (#OF)",
        5 => "bound range (#BR)",
        6 => "invalid opcode (#UD)",
        7 => "device not available (#NM)",
        8 => "double fault (#DF)",
        13 => "general protection fault (#GP)",
        14 => "page fault (#PF)",
        16 => "x87 floating-point error (#MF)",
        17 => "alignment check (#AC)",
        19 => "SIMD floating-point exception (#XM)",
        _ => "exception",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stub_fits_before_its_slot() {
        assert!(LSTAR_STUB.len() <= SLOT_OFFSET);
    }

    #[test]
    fn doorbell_displacement_targets_the_mirror_page() {
        // `mov %eax, disp32(%rip)` at 0x84, 6 bytes long: target = 0x8a + disp.
        let disp = i32::from_le_bytes([
            LSTAR_STUB[0x86],
            LSTAR_STUB[0x87],
            LSTAR_STUB[0x88],
            LSTAR_STUB[0x89],
        ]);
        assert_eq!(0x8a + disp as i64, (DOORBELL_BASE - STUB_BASE) as i64);
        assert_eq!(doorbell_addr(3) - stub_addr(3), DOORBELL_BASE - STUB_BASE);
    }

    #[test]
    fn stub_rings_the_doorbell_for_exit_and_signal() {
        // `cmp $EXIT,%eax; jae bell` at 0x79: every state from EXIT on (EXIT, SIGNAL) rings.
        assert_eq!(&LSTAR_STUB[0x79..0x7e], &[0x83, 0xf8, 0x04, 0x73, 0x06]);
        assert_eq!(multios_lwk_abi::state::EXIT, 4);
        const { assert!(multios_lwk_abi::state::SIGNAL > multios_lwk_abi::state::EXIT) };
    }

    #[test]
    fn tss_descriptor_encodes_base() {
        let (lo, hi) = tss_descriptor(0x7e00_0000_6000);
        assert_eq!(hi, 0x7e00);
        assert_eq!((lo >> 16) & 0xff_ffff, 0x00_6000);
        assert_eq!((lo >> 40) & 0xff, 0x89);
    }
}
