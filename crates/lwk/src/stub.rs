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

/// The version of `multios_lwk_abi` that [`LSTAR_STUB`] was assembled against: the stub's
/// displacements and state immediates are only right for that layout (a test decodes them).
pub const STUB_ABI_VERSION: u32 = 2;

/// Writes the stub for vCPU `i` with a zeroed slot.
pub fn write_stub(mem: &GuestMemory, i: u64, spin_budget: u32) {
    // A new ABI needs a reassembled stub: refuse to build rather than install a stale one.
    const { assert!(STUB_ABI_VERSION == multios_lwk_abi::ABI_VERSION) };
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

    /// What one stub instruction does to memory: the slot field or doorbell it addresses
    /// RIP-relatively, with the access width, and the immediate it compares or stores.
    #[derive(Debug, PartialEq)]
    enum Access {
        Slot { field: &'static str, bytes: usize },
        Doorbell,
    }

    /// The slot field at `off` from the slot's start, with its width (from the ABI crate).
    fn slot_field(off: i64) -> Option<(&'static str, usize)> {
        use multios_lwk_abi::offset::*;
        let fields: [(&str, usize, usize); 8] = [
            ("state", STATE, 4),
            ("spin_budget", SPIN_BUDGET, 4),
            ("nr", NR, 8),
            ("args", ARGS, 48),
            ("ret", RET, 8),
            ("rip", RIP, 8),
            ("rflags", RFLAGS, 8),
            ("rsp", RSP, 8),
        ];
        fields
            .iter()
            .find(|(_, o, len)| off >= *o as i64 && off < (*o + len) as i64)
            .map(|(n, o, len)| {
                // args[k] is one u64 of the array; every other field is accessed whole.
                let w = if *n == "args" { 8 } else { *len };
                assert_eq!((off - *o as i64) % w as i64, 0, "{n} at {off} is misaligned");
                (*n, w)
            })
    }

    /// Decodes the stub and returns, in order, every memory access it makes.
    fn accesses() -> Vec<(u64, Access)> {
        use iced_x86::{Decoder, DecoderOptions, OpKind};
        let mut d = Decoder::with_ip(64, &LSTAR_STUB, 0, DecoderOptions::NONE);
        let mut out = Vec::new();
        while d.can_decode() {
            let ins = d.decode();
            assert!(!ins.is_invalid(), "undecodable byte at {:#x}", ins.ip());
            if !(0..ins.op_count()).any(|k| ins.op_kind(k) == OpKind::Memory) {
                continue;
            }
            assert!(
                ins.is_ip_rel_memory_operand(),
                "{:?} at {:#x} is not RIP-relative",
                ins.mnemonic(),
                ins.ip()
            );
            let target = ins.ip_rel_memory_address() as i64;
            let access = if target == (DOORBELL_BASE - STUB_BASE) as i64 {
                Access::Doorbell
            } else {
                let off = target - SLOT_OFFSET as i64;
                let (field, bytes) = slot_field(off).unwrap_or_else(|| {
                    panic!("{:?} at {:#x} addresses {target:#x}", ins.mnemonic(), ins.ip())
                });
                let width = match ins.memory_size() {
                    iced_x86::MemorySize::UInt32 | iced_x86::MemorySize::Int32 => 4,
                    iced_x86::MemorySize::UInt64 | iced_x86::MemorySize::Int64 => 8,
                    other => panic!("{other:?} access at {:#x}", ins.ip()),
                };
                assert_eq!(
                    width,
                    bytes,
                    "{:?} at {:#x}: width of {field}",
                    ins.mnemonic(),
                    ins.ip()
                );
                Access::Slot { field, bytes }
            };
            out.push((ins.ip(), access));
        }
        out
    }

    #[test]
    fn every_stub_memory_operand_matches_the_abi_offsets() {
        let got: Vec<&str> = accesses()
            .iter()
            .map(|(_, a)| match a {
                Access::Slot { field, .. } => *field,
                Access::Doorbell => "doorbell",
            })
            .collect();
        let want = [
            "nr",
            "args",
            "args",
            "args",
            "args",
            "args",
            "args",
            "rip",
            "rflags",
            "rsp", // save
            "state",
            "spin_budget",
            "state",
            "doorbell", // post, spin, ring
            "ret",
            "state",
            "rip",
            "rflags", // return
        ];
        assert_eq!(got, want);
        // The six argument stores go to args[0..6] in the System V syscall register order.
        let args: Vec<i64> = {
            use iced_x86::{Decoder, DecoderOptions};
            Decoder::with_ip(64, &LSTAR_STUB, 0, DecoderOptions::NONE)
                .into_iter()
                .filter(|i| i.is_ip_rel_memory_operand())
                .map(|i| {
                    i.ip_rel_memory_address() as i64 - (SLOT_OFFSET + multios_lwk_abi::offset::ARGS) as i64
                })
                .filter(|o| (0..48).contains(o))
                .collect()
        };
        assert_eq!(args, [0, 8, 16, 24, 32, 40]);
    }

    #[test]
    fn stub_state_immediates_are_the_abi_states() {
        use iced_x86::{Decoder, DecoderOptions, Mnemonic, OpKind};
        use multios_lwk_abi::state;
        let imms: Vec<(Mnemonic, u64)> = Decoder::with_ip(64, &LSTAR_STUB, 0, DecoderOptions::NONE)
            .into_iter()
            .filter(|i| {
                let touches_state = !i.is_ip_rel_memory_operand()
                    || i.ip_rel_memory_address() == (SLOT_OFFSET + multios_lwk_abi::offset::STATE) as u64;
                touches_state
                    && (0..i.op_count()).any(|k| {
                        i.op_kind(k) == OpKind::Immediate32 || i.op_kind(k) == OpKind::Immediate8to32
                    })
                    && matches!(i.mnemonic(), Mnemonic::Mov | Mnemonic::Cmp)
                    && i.ip() >= 0x18
            })
            .map(|i| (i.mnemonic(), i.immediate(1)))
            .collect();
        assert_eq!(
            imms,
            [
                (Mnemonic::Mov, state::REQUEST as u64),
                (Mnemonic::Cmp, state::DONE as u64),
                (Mnemonic::Cmp, state::EXIT as u64),
                (Mnemonic::Mov, state::IDLE as u64),
            ]
        );
    }

    #[test]
    fn tss_descriptor_encodes_base() {
        let (lo, hi) = tss_descriptor(0x7e00_0000_6000);
        assert_eq!(hi, 0x7e00);
        assert_eq!((lo >> 16) & 0xff_ffff, 0x00_6000);
        assert_eq!((lo >> 40) & 0xff, 0x89);
    }
}
