//! On by default (`--no-rewrite-syscalls` turns it off): avoiding this KVM's ≈ 3 µs `syscall` trap.
//!
//! On this KVM, `syscall` from guest ring 3 costs about as much as a VM exit before it even
//! reaches the LSTAR stub. For the common compiled pattern `mov $nr,%eax; syscall` the 5-byte
//! `mov` is replaced by `jmp thunk` to a per-site thunk in the thunk page, which does what the
//! CPU would have done and enters the same stub directly:
//!
//! ```text
//!  thunk:  mov $nr,%eax            ; the replaced instruction
//!          lea site+7(%rip),%rcx   ; the return address `syscall` would have put in rcx
//!          rdgsbase %r11           ; GS base = this vCPU's stub (set by the VMM)
//!          jmp *%r11               ; the LSTAR stub; it returns with jmp *%rcx
//! ```
//!
//! The original `syscall` stays at site+5, so a branch to it still works (through the trap).
//!
//! glibc's `read` enters with `xor %eax,%eax; syscall; cmp $-4096,%rax` (nr 0 needs no `mov`):
//! 4 bytes are too few for a `jmp rel32`, so the 10 bytes of the three instructions are replaced,
//! and the thunk does the `xor`, enters the stub with rcx pointing at its own copy of the `cmp`,
//! and jumps back after it (`xor`, `lea cont(%rip),%rcx`, `rdgsbase`, `jmp *%r11`; cont: `cmp`,
//! `jmp site+10`); the 5 bytes after the `jmp` become `int3`, so a branch into them traps loudly.
//! No stack is touched (the red zone is safe); r11 ends up holding the stub address instead of the
//! flags, which no syscall wrapper reads. Sites are found by decoding the executable segments
//! with a real x86 decoder (iced-x86), not by byte matching, so a `b8` byte inside another
//! instruction is never taken for a `mov`. Only code within ±2 GiB of the thunk page is rewritten:
//! the main program, ld.so, and executable file mappings made later (shared libraries, placed
//! bottom-up near the program while rewriting is on). Code written at run time (JIT) is never
//! rewritten: it traps as usual.
//!
//! Guards: the `mov` must be exactly `b8 imm32` with an immediate below [`MAX_NR`] (a real system
//! call number: a data byte sequence that merely decodes as the pattern is far less likely to pass),
//! and the `syscall` after it is kept, so a branch to it, with any `eax`, still works (through the
//! trap). A branch into the 5 bytes of the `mov` would be a branch into the middle of an
//! instruction, which compiled code does not do.

use crate::memory::GuestMemory;
use iced_x86::{Code, Decoder, DecoderOptions, Mnemonic, Register};

const THUNK_SIZE: u64 = 32;

/// Immediates at or above this are not system call numbers (x86-64 numbers are < 550): not rewritten.
pub const MAX_NR: u32 = 1024;

/// Thunk allocation in the thunk page.
#[derive(Debug)]
pub struct Thunks {
    next: u64,
    end: u64,
}

impl Thunks {
    pub fn new(mem: &GuestMemory) -> Self {
        Thunks {
            next: mem.thunks.base,
            end: mem.thunks.end(),
        }
    }
}

/// Where the guest issues again the system call whose return address is `rip` (Linux's restart
/// after a signal): the 2-byte `syscall` before it — kept in place at rewritten `mov` sites — or,
/// for a return into a thunk (the `xor %eax,%eax` sites, which come back to the thunk's copy of
/// the `cmp`), the start of that thunk, which sets eax and enters the stub again.
pub fn restart_at(rip: u64) -> u64 {
    let base = crate::memory::THUNK_BASE;
    if (base..base + 0x20_0000).contains(&rip) {
        base + (rip - base) / THUNK_SIZE * THUNK_SIZE
    } else {
        rip.wrapping_sub(2)
    }
}

fn rel32(from_next_ip: u64, to: u64) -> Option<i32> {
    i32::try_from(to as i64 - from_next_ip as i64).ok()
}

/// `cmp $-4096,%rax`: what glibc's wrappers do right after `syscall`.
const CMP_RAX_M4096: [u8; 6] = [0x48, 0x3d, 0x00, 0xf0, 0xff, 0xff];

/// Offsets of every rewritable byte pattern (`b8 imm32 0f 05` with imm < [`MAX_NR`], or
/// `31/33 c0 0f 05` followed by `cmp $-4096,%rax`) in `code`: a cheap scan; only the code before
/// these has to be decoded.
fn candidates(code: &[u8]) -> Vec<usize> {
    (0..code.len())
        .filter(|&i| {
            let w = &code[i..];
            (w.len() >= 7
                && w[0] == 0xb8
                && w[5] == 0x0f
                && w[6] == 0x05
                && u32::from_le_bytes([w[1], w[2], w[3], w[4]]) < MAX_NR)
                || (w.len() >= 10
                    && (w[0] == 0x31 || w[0] == 0x33)
                    && w[1] == 0xc0
                    && w[2] == 0x0f
                    && w[3] == 0x05
                    && w[4..10] == CMP_RAX_M4096)
        })
        .collect()
}

/// A rewritable site.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Site {
    /// `mov $nr,%eax; syscall` at this address.
    Mov(u64, u32),
    /// `xor %eax,%eax; syscall; cmp $-4096,%rax` at this address (the first byte of the `xor`).
    XorCmp(u64, u8),
}

/// The sites (address, nr) in `code` (loaded at `addr`): `mov $nr,%eax` immediately followed by
/// `syscall`, both found by decoding. Decoding starts only at known instruction boundaries: the
/// start of `code`, the end of an earlier decoded stretch, or a function start from `starts`
/// (sorted) — the nearest one before each candidate byte pattern, so code far from any system
/// call is not decoded. With no `starts` this is a linear sweep from the start.
fn find_sites(code: &[u8], addr: u64, starts: &[u64]) -> Vec<Site> {
    let mut sites = Vec::new();
    let mut decoded_to = addr; // everything below was decoded (or skipped) up to a boundary
    for off in candidates(code) {
        let c = addr + off as u64;
        if c < decoded_to {
            continue; // already decoded past it
        }
        let func = starts.partition_point(|&s| s <= c);
        let start = match func.checked_sub(1).map(|i| starts[i]) {
            Some(f) if f > decoded_to => f,
            _ => decoded_to,
        };
        let from = (start - addr) as usize;
        let mut prev: Option<iced_x86::Instruction> = None;
        let mut xor_syscall: Option<u64> = None;
        let mut dec = Decoder::with_ip(64, &code[from..], start, DecoderOptions::NONE);
        let mut ins = iced_x86::Instruction::default();
        while dec.can_decode() {
            dec.decode_out(&mut ins);
            if let Some(x) = xor_syscall.take() {
                // The instruction after `xor; syscall` must be the exact `cmp` the thunk copies.
                let at = (ins.ip() - addr) as usize;
                if ins.len() == 6 && code.get(at..at + 6) == Some(&CMP_RAX_M4096[..]) {
                    sites.push(Site::XorCmp(x, code[(x - addr) as usize]));
                }
            }
            if ins.mnemonic() == Mnemonic::Syscall {
                if let Some(p) = prev {
                    if p.code() == Code::Mov_r32_imm32
                        && p.op0_register() == Register::EAX
                        && p.len() == 5
                        && p.next_ip() == ins.ip()
                        && code[(p.ip() - addr) as usize] == 0xb8
                        && p.immediate32() < MAX_NR
                    {
                        sites.push(Site::Mov(p.ip(), p.immediate32()));
                    }
                    if matches!(p.code(), Code::Xor_rm32_r32 | Code::Xor_r32_rm32)
                        && p.op0_register() == Register::EAX
                        && p.op1_register() == Register::EAX
                        && p.len() == 2
                        && p.next_ip() == ins.ip()
                    {
                        xor_syscall = Some(p.ip());
                    }
                }
            }
            prev = Some(ins);
            if ins.ip() >= c + 10
                || (ins.ip() >= c + 5 && xor_syscall.is_none() && code[(c - addr) as usize] == 0xb8)
            {
                break; // past this candidate's `syscall` (or desynchronised from it)
            }
        }
        decoded_to = ins.next_ip().max(decoded_to);
    }
    sites
}

/// The thunk for `site` placed at `thunk`, and the bytes to write at the site (None when either
/// jump is out of rel32 reach).
fn thunk_for(site: Site, thunk: u64) -> Option<(Vec<u8>, u64, Vec<u8>)> {
    let mut t = Vec::with_capacity(THUNK_SIZE as usize);
    let (at, patch) = match site {
        Site::Mov(at, nr) => {
            let back = rel32(thunk + 12, at + 7)?;
            t.push(0xb8); // mov $nr,%eax
            t.extend_from_slice(&nr.to_le_bytes());
            t.extend_from_slice(&[0x48, 0x8d, 0x0d]); // lea rel32(%rip),%rcx: the return address
            t.extend_from_slice(&back.to_le_bytes());
            t.extend_from_slice(&[0xf3, 0x49, 0x0f, 0xae, 0xcb]); // rdgsbase %r11
            t.extend_from_slice(&[0x41, 0xff, 0xe3]); // jmp *%r11
            let mut jmp = vec![0xe9];
            jmp.extend_from_slice(&rel32(at + 5, thunk)?.to_le_bytes());
            (at, jmp)
        }
        Site::XorCmp(at, op) => {
            // 0: xor; 2: lea cont(%rip),%rcx (ends at 9); 9: rdgsbase; 14: jmp *%r11;
            // 17 (cont): cmp $-4096,%rax; 23: jmp site+10.
            t.extend_from_slice(&[op, 0xc0]);
            t.extend_from_slice(&[0x48, 0x8d, 0x0d]);
            t.extend_from_slice(&8i32.to_le_bytes());
            t.extend_from_slice(&[0xf3, 0x49, 0x0f, 0xae, 0xcb]);
            t.extend_from_slice(&[0x41, 0xff, 0xe3]);
            t.extend_from_slice(&CMP_RAX_M4096);
            t.push(0xe9);
            t.extend_from_slice(&rel32(thunk + 28, at + 10)?.to_le_bytes());
            let mut jmp = vec![0xe9];
            jmp.extend_from_slice(&rel32(at + 5, thunk)?.to_le_bytes());
            jmp.extend_from_slice(&[0xcc; 5]);
            (at, jmp)
        }
    };
    t.resize(THUNK_SIZE as usize, 0xcc);
    Some((t, at, patch))
}

/// Rewrites the `mov $nr,%eax; syscall` sites in `[addr, addr+len)`; returns how many.
pub fn rewrite(mem: &GuestMemory, thunks: &mut Thunks, addr: u64, len: u64) -> usize {
    rewrite_from(mem, thunks, addr, len, &[])
}

/// [`rewrite`], decoding from the nearest of the sorted function `starts` (symbols of the ELF
/// file) before each candidate instead of from `addr`.
pub fn rewrite_from(mem: &GuestMemory, thunks: &mut Thunks, addr: u64, len: u64, starts: &[u64]) -> usize {
    let mut code = vec![0u8; len as usize];
    mem.read(addr, &mut code);
    let sites = find_sites(&code, addr, starts);
    let mut n = 0;
    for site in sites {
        let thunk = thunks.next;
        if thunk + THUNK_SIZE > thunks.end {
            break;
        }
        let Some((t, at, patch)) = thunk_for(site, thunk) else {
            continue;
        };
        mem.write(thunk, &t);
        mem.write(at, &patch);
        thunks.next += THUNK_SIZE;
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glibc_read_pattern_is_found_and_its_thunk_returns_after_the_cmp() {
        // nop; xor %eax,%eax; syscall; cmp $-4096,%rax; ja +0; ret
        let mut c = vec![0x90, 0x31, 0xc0, 0x0f, 0x05];
        c.extend_from_slice(&CMP_RAX_M4096);
        c.extend_from_slice(&[0x77, 0x00, 0xc3]);
        let a = 0x400000;
        assert_eq!(candidates(&c), vec![1]);
        assert_eq!(find_sites(&c, a, &[]), vec![Site::XorCmp(a + 1, 0x31)]);
        // Without the cmp after it the pattern is left alone (the thunk could not resume).
        assert!(find_sites(&[0x90, 0x31, 0xc0, 0x0f, 0x05, 0xc3, 0, 0, 0, 0, 0], a, &[]).is_empty());
        let thunk = 0x200000;
        let (t, at, patch) = thunk_for(Site::XorCmp(a + 1, 0x31), thunk).expect("in reach");
        assert_eq!(at, a + 1);
        assert_eq!(patch.len(), 10);
        // lea's target (end of lea at +9, displacement 8) is the copied cmp at +17.
        assert_eq!(9 + i32::from_le_bytes([t[5], t[6], t[7], t[8]]), 17);
        assert_eq!(&t[17..23], &CMP_RAX_M4096);
        let back = i32::from_le_bytes([t[24], t[25], t[26], t[27]]) as i64;
        assert_eq!((thunk as i64 + 28 + back) as u64, a + 11);
    }

    #[test]
    fn thunk_layout_offsets() {
        // lea's rel32 is relative to the end of the lea, 12 bytes into the thunk.
        assert_eq!(5 + 7, 12);
        assert_eq!(rel32(0x400005, 0x200000), Some(-0x200005));
        assert_eq!(rel32(0, 1 << 40), None);
    }

    #[test]
    fn candidate_scan_needs_a_small_immediate_before_syscall() {
        assert_eq!(candidates(&[0x90, 0xb8, 0x27, 0, 0, 0, 0x0f, 0x05]), vec![1]);
        assert!(candidates(&[0xb8, 0x27, 0, 0, 0x01, 0x0f, 0x05]).is_empty()); // imm ≥ MAX_NR
        assert!(candidates(&[0xb8, 0x27, 0, 0, 0, 0x90, 0x0f, 0x05]).is_empty()); // not adjacent
        assert!(candidates(&[0xb8, 0x27, 0, 0]).is_empty());
    }

    /// The `.eh_frame_hdr` function starts give the same sites as a sweep of the whole text, in
    /// the stripped libraries this machine's programs load.
    #[test]
    fn eh_frame_starts_find_the_sites_a_linear_sweep_finds() {
        let files = [
            "/lib/x86_64-linux-gnu/libc.so.6",
            "/lib/x86_64-linux-gnu/libm.so.6",
            "/lib/x86_64-linux-gnu/libz.so.1",
            "/usr/bin/python3.11",
            "/usr/bin/racket",
        ];
        for lib in files {
            let Ok(file) = crate::sys::MappedFile::open(std::path::Path::new(lib)) else {
                assert!(!lib.ends_with("libc.so.6"), "libc.so.6 must exist");
                continue;
            };
            let bytes = file.bytes();
            let phs = crate::loader::ehframe::program_headers(bytes).expect("ELF");
            let text = phs
                .iter()
                .find(|p| p.p_type == goblin::elf::program_header::PT_LOAD && p.is_executable())
                .expect("a text segment");
            let code = &bytes[text.p_offset as usize..(text.p_offset + text.p_filesz) as usize];
            let starts =
                crate::loader::ehframe::starts_in_mapping(bytes, text.p_offset, text.p_vaddr, text.p_filesz);
            let swept = find_sites(code, text.p_vaddr, &[]);
            assert_eq!(find_sites(code, text.p_vaddr, &starts), swept, "{lib}");
            if lib.ends_with("libc.so.6") {
                assert!(swept.len() > 300 && starts.len() > 1000, "{} sites", swept.len());
            }
        }
    }

    /// f: nop; mov $39,%eax; syscall; ret ; g: movabs $imm64 (its bytes hold b8 27 0 0 0 0f 05),
    /// ret ; h: mov $60,%eax; syscall
    fn sample() -> Vec<u8> {
        let mut c = vec![0x90, 0xb8, 39, 0, 0, 0, 0x0f, 0x05, 0xc3];
        c.extend_from_slice(&[0x48, 0xb8, 0xb8, 39, 0, 0, 0, 0x0f, 0x05, 0x90, 0xc3]);
        c.extend_from_slice(&[0xb8, 60, 0, 0, 0, 0x0f, 0x05]);
        c
    }

    #[test]
    fn sites_are_decoded_not_byte_matched_with_or_without_function_starts() {
        let a = 0x400000;
        let want = vec![Site::Mov(a + 1, 39), Site::Mov(a + 20, 60)];
        assert_eq!(find_sites(&sample(), a, &[]), want);
        assert_eq!(find_sites(&sample(), a, &[a, a + 9, a + 20]), want);
        // Only some function starts known (a stripped part): the rest is swept linearly.
        assert_eq!(find_sites(&sample(), a, &[a + 9]), want);
    }
}
