//! Finding the `syscall` instructions a thunk can take over (see `rewrite.rs` for the thunks).
//!
//! The code is decoded with a real x86 decoder (iced-x86), never byte-matched: decoding starts
//! only at known instruction boundaries — the start of the code, the end of an earlier decoded
//! stretch, or a function start from the ELF symbols, the nearest one before each `0f 05` byte
//! pair — and goes on [`LOOKAHEAD`] bytes past it, so code far from any system call is not
//! decoded. Each decoded `syscall` becomes one of four sites:
//!
//! * [`Site::Mov`]: `mov $nr,%eax; syscall` — the 5-byte `mov` becomes `jmp thunk`;
//! * [`Site::XorCmp`]: glibc's `read`, `xor %eax,%eax; syscall; cmp $-4096,%rax`;
//! * [`Site::After`] (issue #14): the `syscall` and the instructions after it, at least 5 bytes,
//!   move into the thunk, which enters the stub and runs them on the way back — glibc's generic
//!   `syscall()` (`mov 8(%rsp),%r9; syscall; cmp $-4095,%rax`), and every wrapper that set `eax`
//!   earlier than the instruction before the `syscall` (`mov $202,%eax; xor $0x80,%sil;
//!   syscall; cmp …`: futex, rt_sigprocmask, openat in ld.so…);
//! * [`Site::Before`] (issue #14): the instructions before the `syscall`, at least 5 bytes, move
//!   into the thunk, and the `syscall` stays in place (`movq $32,(%rsp); syscall; mov 0x…(%rip)`).
//!
//! An instruction is moved only when it means the same at another address: it falls through
//! (no branch), has no RIP-relative operand and is not itself a system call. A site is dropped
//! when a direct branch seen in the decoded code (or a function start) lands inside the bytes
//! it replaces, other than on their first byte — a branch there would land in the `jmp` or its
//! `int3` padding. (A branch computed at run time into that middle is not seen; compiled code
//! does not jump into the middle of a wrapper's instructions.)

use iced_x86::{Code, Decoder, DecoderOptions, FlowControl, Instruction, Mnemonic, OpKind, Register};
use std::collections::BTreeSet;

/// Immediates at or above this are not system call numbers (x86-64 numbers are < 550): not rewritten.
pub const MAX_NR: u32 = 1024;

/// `cmp $-4096,%rax`: what glibc's wrappers do right after `syscall`.
pub const CMP_RAX_M4096: [u8; 6] = [0x48, 0x3d, 0x00, 0xf0, 0xff, 0xff];

/// How far past each `syscall` decoding goes: the instructions an [`Site::After`] moves, and the
/// branches just after a wrapper (a retry loop) whose targets must not fall inside a site.
const LOOKAHEAD: u64 = 256;

/// The most bytes a thunk can copy: [`Site::After`] (7 + 5 + 3 + n + 5 ≤ 32) and
/// [`Site::Before`] (n + 7 + 5 + 3 ≤ 32).
pub const MAX_AFTER: usize = 12;
pub const MAX_BEFORE: usize = 17;

/// Instructions moved into a thunk: their bytes and how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moved {
    pub bytes: [u8; MAX_BEFORE],
    pub len: u8,
}

impl Moved {
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

/// A rewritable site.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Site {
    /// `mov $nr,%eax; syscall` at this address.
    Mov(u64, u32),
    /// `xor %eax,%eax; syscall; cmp $-4096,%rax` at this address (the first byte of the `xor`).
    XorCmp(u64, u8),
    /// A `syscall` at this address whose following instructions (`Moved`) go into the thunk.
    After(u64, Moved),
    /// Instructions (`Moved`) at this address, followed by the `syscall` the thunk stands for.
    Before(u64, Moved),
}

impl Site {
    /// The bytes the site's patch replaces: [start, end).
    pub fn span(&self) -> (u64, u64) {
        match *self {
            Site::Mov(at, _) => (at, at + 5),
            Site::XorCmp(at, _) => (at, at + 10),
            Site::After(at, m) => (at, at + 2 + u64::from(m.len)),
            Site::Before(at, m) => (at, at + u64::from(m.len)),
        }
    }
}

/// Offsets of the bytes worth decoding around in `code`: every `0f 05` pair (a `syscall` if it
/// is an instruction at all), and whether it is *strong*: the pair right after `b8 imm32` with
/// a small immediate or after `31/33 c0` (the patterns compiled wrappers have). A cheap scan;
/// only the code near these is decoded.
pub fn candidates(code: &[u8]) -> Vec<(usize, bool)> {
    // A vectorised search (libc.so.6's 1.4 MB of text, at every start-up: issue #13); the pairs
    // may overlap no other pair (`0f 05` cannot start at its own second byte), so each is found.
    memchr::memmem::find_iter(code, &[0x0f, 0x05])
        .map(|i| {
            let mov = i >= 5
                && code[i - 5] == 0xb8
                && u32::from_le_bytes([code[i - 4], code[i - 3], code[i - 2], code[i - 1]]) < MAX_NR;
            let xor = i >= 2 && (code[i - 2] == 0x31 || code[i - 2] == 0x33) && code[i - 1] == 0xc0;
            (i, mov || xor)
        })
        .collect()
}

/// How far before a weak candidate (a `0f 05` pair in no wrapper pattern) decoding may have to
/// start: farther from every known instruction boundary, it is left alone (it traps if it is a
/// `syscall`). A program's code holds a few such pairs by chance — inside other instructions or
/// data — and sweeping megabytes to reach them cost tens of milliseconds per start-up (python3.11).
const WEAK_REACH: u64 = 4096;

/// True when `ins` means the same at any address: it falls through, reads no RIP-relative
/// operand and is not a system call.
fn relocatable(ins: &Instruction) -> bool {
    ins.flow_control() == FlowControl::Next
        && !ins.is_ip_rel_memory_operand()
        && !matches!(
            ins.mnemonic(),
            Mnemonic::Syscall | Mnemonic::Sysenter | Mnemonic::Int
        )
        && (0..ins.op_count()).all(|k| ins.op_kind(k) != OpKind::NearBranch64)
}

/// A decoded `syscall` with the instructions right around it (each list contiguous with it, at
/// most three, nearest last for `before` and first for `after`).
#[derive(Debug, Clone)]
struct Neighbourhood {
    before: Vec<Instruction>,
    syscall: Instruction,
    after: Vec<Instruction>,
}

/// The `syscall`s of `code` (loaded at `addr`) near its candidate byte pairs, each with its
/// neighbours, and the direct branch targets seen near a candidate (function starts included).
/// Decoded as a stream: only a few instructions are held at a time (libc.so.6 is swept whole).
fn decode(code: &[u8], addr: u64, starts: &[u64]) -> (Vec<Neighbourhood>, BTreeSet<u64>) {
    let all = candidates(code);
    let cands: Vec<u64> = all.iter().map(|&(o, _)| addr + o as u64).collect();
    // A target matters only if it can fall inside a site: within a few bytes of a `syscall`.
    let near = |t: u64| {
        let k = cands.partition_point(|&c| c + 64 < t);
        cands.get(k).is_some_and(|&c| c <= t + 64)
    };
    let mut targets: BTreeSet<u64> = starts.iter().copied().filter(|&t| near(t)).collect();
    let mut found = Vec::new();
    let end = addr + code.len() as u64;
    let mut decoded_to = addr; // everything below was decoded (or skipped) up to a boundary
    for (&c, &(_, strong)) in cands.iter().zip(&all) {
        if c < decoded_to {
            continue; // already decoded past it
        }
        let func = starts.partition_point(|&s| s <= c);
        let start = match func.checked_sub(1).map(|i| starts[i]) {
            Some(f) if f > decoded_to && f < end => f,
            _ => decoded_to,
        };
        if !strong && c - start > WEAK_REACH {
            continue;
        }
        let from = (start - addr) as usize;
        let mut dec = Decoder::with_ip(64, &code[from..], start, DecoderOptions::NONE);
        let mut ins = Instruction::default();
        let mut history: Vec<Instruction> = Vec::with_capacity(4);
        let mut open: Vec<Neighbourhood> = Vec::new();
        let stop = c.saturating_add(LOOKAHEAD);
        while dec.can_decode() {
            dec.decode_out(&mut ins);
            if ins.is_invalid() {
                history.clear();
                continue;
            }
            if matches!(
                ins.flow_control(),
                FlowControl::UnconditionalBranch | FlowControl::ConditionalBranch | FlowControl::Call
            ) && ins.op0_kind() == OpKind::NearBranch64
                && near(ins.near_branch_target())
            {
                targets.insert(ins.near_branch_target());
            }
            // Neighbourhoods still collecting what follows their `syscall`.
            let mut k = 0;
            while k < open.len() {
                let n = &mut open[k];
                let last = n.after.last().unwrap_or(&n.syscall);
                if last.next_ip() == ins.ip() && n.after.len() < 3 {
                    n.after.push(ins);
                }
                if n.after.len() == 3 || n.after.last().unwrap_or(&n.syscall).next_ip() != ins.next_ip() {
                    found.push(open.swap_remove(k));
                } else {
                    k += 1;
                }
            }
            if history.last().is_some_and(|h| h.next_ip() != ins.ip()) {
                history.clear();
            }
            if ins.mnemonic() == Mnemonic::Syscall {
                open.push(Neighbourhood {
                    before: history.clone(),
                    syscall: ins,
                    after: Vec::new(),
                });
            }
            history.push(ins);
            if history.len() > 3 {
                history.remove(0);
            }
            if ins.next_ip() >= stop {
                break;
            }
        }
        found.append(&mut open);
        decoded_to = ins.next_ip().max(decoded_to);
    }
    found.sort_by_key(|n| n.syscall.ip());
    (found, targets)
}

/// Instructions `list` (contiguous, in order) as a [`Moved`], if they fit in `max` bytes and
/// every one is [`relocatable`].
fn moved(code: &[u8], addr: u64, list: &[Instruction], max: usize) -> Option<Moved> {
    let (first, last) = (list.first()?, list.last()?);
    let len = (last.next_ip() - first.ip()) as usize;
    if len > max || !list.iter().all(relocatable) {
        return None;
    }
    let at = (first.ip() - addr) as usize;
    let mut bytes = [0xcc; MAX_BEFORE];
    bytes[..len].copy_from_slice(code.get(at..at + len)?);
    Some(Moved {
        bytes,
        len: len as u8,
    })
}

/// The site the `syscall` of `n` makes, if any.
fn classify(code: &[u8], addr: u64, n: &Neighbourhood) -> Option<Site> {
    let s = &n.syscall;
    if let Some(p) = n.before.last() {
        if p.code() == Code::Mov_r32_imm32
            && p.op0_register() == Register::EAX
            && p.len() == 5
            && code[(p.ip() - addr) as usize] == 0xb8
            && p.immediate32() < MAX_NR
        {
            return Some(Site::Mov(p.ip(), p.immediate32()));
        }
        let next_is_cmp = n.after.first().is_some_and(|c| {
            let at = (c.ip() - addr) as usize;
            c.len() == 6 && code.get(at..at + 6) == Some(&CMP_RAX_M4096[..])
        });
        if matches!(p.code(), Code::Xor_rm32_r32 | Code::Xor_r32_rm32)
            && p.op0_register() == Register::EAX
            && p.op1_register() == Register::EAX
            && p.len() == 2
            && next_is_cmp
        {
            return Some(Site::XorCmp(p.ip(), code[(p.ip() - addr) as usize]));
        }
    }
    // The instructions after the `syscall`, up to 5 bytes with it.
    for k in 1..=n.after.len() {
        if n.after[k - 1].next_ip() - s.ip() >= 5 {
            if let Some(m) = moved(code, addr, &n.after[..k], MAX_AFTER) {
                return Some(Site::After(s.ip(), m));
            }
            break;
        }
    }
    // The instructions before it, up to 5 bytes.
    for k in (0..n.before.len()).rev() {
        if s.ip() - n.before[k].ip() >= 5 {
            return moved(code, addr, &n.before[k..], MAX_BEFORE).map(|m| Site::Before(n.before[k].ip(), m));
        }
    }
    None
}

/// The sites in `code` (loaded at `addr`), in address order, none overlapping another and none
/// with a known branch target inside the bytes it replaces. `starts` (sorted) are function
/// starts from the ELF symbols; with none the code is swept linearly from its start.
pub fn find_sites(code: &[u8], addr: u64, starts: &[u64]) -> Vec<Site> {
    let (found, targets) = decode(code, addr, starts);
    let mut sites = Vec::new();
    let mut claimed = addr;
    for n in &found {
        let Some(site) = classify(code, addr, n) else {
            continue;
        };
        let (from, to) = site.span();
        if from < claimed || targets.range(from + 1..to).next().is_some() {
            continue;
        }
        claimed = to;
        sites.push(site);
    }
    sites
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vectorised search finds exactly the `0f 05` pairs a byte-by-byte scan finds, in
    /// libc.so.6 and in bytes made of runs of `0f` and `05`.
    #[test]
    fn candidates_are_every_0f_05_pair() {
        let naive = |code: &[u8]| -> Vec<usize> {
            (0..code.len().saturating_sub(1))
                .filter(|&i| code[i] == 0x0f && code[i + 1] == 0x05)
                .collect()
        };
        let libc = std::fs::read("/lib/x86_64-linux-gnu/libc.so.6").expect("libc.so.6 must exist");
        let mut odd = Vec::new();
        for k in 0..200u32 {
            odd.push(if k.wrapping_mul(2_654_435_761) >> 31 == 0 {
                0x0f
            } else {
                0x05
            });
        }
        for code in [&libc[..], &odd[..], &[0x0f][..], &[][..], &[0x0f, 0x05][..]] {
            let found: Vec<usize> = candidates(code).into_iter().map(|c| c.0).collect();
            assert_eq!(found, naive(code));
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

    /// glibc's `syscall()`: mov %rdi,%rax; mov %rsi,%rdi; mov %rdx,%rsi; mov %rcx,%rdx;
    /// mov %r8,%r10; mov %r9,%r8; mov 8(%rsp),%r9; syscall; cmp $-4095,%rax; jae +1; ret; ret
    fn generic_syscall() -> Vec<u8> {
        let mut c = vec![
            0x48, 0x89, 0xf8, 0x48, 0x89, 0xf7, 0x48, 0x89, 0xd6, 0x48, 0x89, 0xca, 0x4d, 0x89, 0xc2, 0x4d,
            0x89, 0xc8, 0x4c, 0x8b, 0x4c, 0x24, 0x08, 0x0f, 0x05,
        ];
        c.extend_from_slice(&[0x48, 0x3d, 0x01, 0xf0, 0xff, 0xff, 0x73, 0x01, 0xc3, 0xc3]);
        c
    }

    #[test]
    fn the_generic_syscall_function_moves_the_cmp_after_its_syscall() {
        let a = 0x400000;
        let sites = find_sites(&generic_syscall(), a, &[a]);
        let [Site::After(at, m)] = sites[..] else {
            panic!("{sites:?}")
        };
        assert_eq!(at, a + 23);
        assert_eq!(m.as_slice(), &[0x48, 0x3d, 0x01, 0xf0, 0xff, 0xff]);
    }

    #[test]
    fn instructions_before_are_moved_when_those_after_cannot_be() {
        // movq $32,(%rsp); syscall; mov 0x10(%rip),%eax (RIP-relative: stays); ret
        let c = [
            0x48, 0xc7, 0x04, 0x24, 0x20, 0, 0, 0, 0x0f, 0x05, 0x8b, 0x05, 0x10, 0, 0, 0, 0xc3,
        ];
        let a = 0x400000;
        let sites = find_sites(&c, a, &[]);
        let [Site::Before(at, m)] = sites[..] else {
            panic!("{sites:?}")
        };
        assert_eq!((at, m.as_slice()), (a, &c[..8]));
    }

    #[test]
    fn a_branch_into_the_moved_bytes_keeps_the_site_as_it_is() {
        // glibc's thread exit: 1: xor %edi,%edi; mov %edx,%eax; syscall; jmp 1b — the loop lands
        // on the `xor`, inside what a Before site would replace; a `jmp` cannot move.
        let c = [
            0x0f, 0x1f, 0x40, 0x00, 0x31, 0xff, 0x89, 0xd0, 0x0f, 0x05, 0xeb, 0xf8,
        ];
        assert!(find_sites(&c, 0x400000, &[]).is_empty());
        // A branch to the `syscall` of an After site is fine: it lands on the `jmp thunk`.
        let mut g = generic_syscall();
        g.extend_from_slice(&[0xeb, (-(g.len() as i8 + 2 - 23)) as u8]); // jmp back to the syscall
        let sites = find_sites(&g, 0x400000, &[0x400000]);
        assert!(matches!(sites[..], [Site::After(..)]), "{sites:?}");
        // A branch to the `cmp` after it is not.
        let mut h = generic_syscall();
        h.extend_from_slice(&[0xeb, (-(h.len() as i8 + 2 - 25)) as u8]);
        assert!(find_sites(&h, 0x400000, &[0x400000]).is_empty());
    }
}
