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
//!
//! Other `syscall`s (issue #14; `rewrite/sites.rs` says which): the instructions after the
//! `syscall` (an `After` site: glibc's generic `syscall()`, wrappers that set `eax` earlier) or
//! before it (a `Before` site) move into the thunk, which runs them around its entry to the stub:
//!
//! ```text
//!  After:   lea cont(%rip),%rcx ; rdgsbase %r11 ; jmp *%r11 ; cont: <moved> ; jmp site+len
//!  Before:  <moved> ; lea syscall+2(%rip),%rcx ; rdgsbase %r11 ; jmp *%r11
//! ```
//!
//! Bytes of the site after its `jmp thunk` become `int3`. An After site's restart (a signal's
//! SA_RESTART, `restart_at`) enters its thunk from the start again with `eax` = the call; a
//! Before site keeps its `syscall` in place and restarts there.

use crate::memory::GuestMemory;

mod cache;
pub(crate) use cache::remember_start as remember_site_cache;
mod sites;

pub use sites::MAX_NR;
use sites::{Site, CMP_RAX_M4096};

const THUNK_SIZE: u64 = 32;

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
        Site::After(at, moved) => {
            // 0: lea cont(%rip),%rcx (ends at 7, cont at 15); 7: rdgsbase; 12: jmp *%r11;
            // 15: the moved instructions; then jmp to the end of the site.
            let n = moved.len as u64;
            t.extend_from_slice(&[0x48, 0x8d, 0x0d]);
            t.extend_from_slice(&8i32.to_le_bytes());
            t.extend_from_slice(&[0xf3, 0x49, 0x0f, 0xae, 0xcb]);
            t.extend_from_slice(&[0x41, 0xff, 0xe3]);
            t.extend_from_slice(moved.as_slice());
            t.push(0xe9);
            t.extend_from_slice(&rel32(thunk + 20 + n, at + 2 + n)?.to_le_bytes());
            (at, patch_to(at, thunk, 2 + n)?)
        }
        Site::Before(at, moved) => {
            // 0: the moved instructions; n: lea after-the-syscall(%rip),%rcx; rdgsbase; jmp *%r11.
            let n = moved.len as u64;
            t.extend_from_slice(moved.as_slice());
            t.extend_from_slice(&[0x48, 0x8d, 0x0d]);
            t.extend_from_slice(&rel32(thunk + n + 7, at + n + 2)?.to_le_bytes());
            t.extend_from_slice(&[0xf3, 0x49, 0x0f, 0xae, 0xcb]);
            t.extend_from_slice(&[0x41, 0xff, 0xe3]);
            (at, patch_to(at, thunk, n)?)
        }
    };
    if t.len() > THUNK_SIZE as usize {
        return None;
    }
    t.resize(THUNK_SIZE as usize, 0xcc);
    Some((t, at, patch))
}

/// `jmp thunk` at `at`, padded with `int3` to `len` bytes.
fn patch_to(at: u64, thunk: u64, len: u64) -> Option<Vec<u8>> {
    let mut jmp = vec![0xe9];
    jmp.extend_from_slice(&rel32(at + 5, thunk)?.to_le_bytes());
    jmp.resize(len as usize, 0xcc);
    Some(jmp)
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
    let sites = cache::sites(&code, addr, starts);
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
    use super::sites::find_sites;
    use super::*;

    #[test]
    fn glibc_read_pattern_is_found_and_its_thunk_returns_after_the_cmp() {
        // nop; xor %eax,%eax; syscall; cmp $-4096,%rax; ja +0; ret
        let mut c = vec![0x90, 0x31, 0xc0, 0x0f, 0x05];
        c.extend_from_slice(&CMP_RAX_M4096);
        c.extend_from_slice(&[0x77, 0x00, 0xc3]);
        let a = 0x400000;
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

    /// The thunk `t` at `thunk`, decoded: (mnemonic, RIP-relative target or branch target).
    fn decoded(t: &[u8], thunk: u64) -> Vec<(iced_x86::Mnemonic, u64)> {
        let mut d = iced_x86::Decoder::with_ip(64, t, thunk, iced_x86::DecoderOptions::NONE);
        let mut out = Vec::new();
        while d.can_decode() {
            let i = d.decode();
            if i.mnemonic() == iced_x86::Mnemonic::Int3 {
                break;
            }
            let target = if i.is_ip_rel_memory_operand() {
                i.ip_rel_memory_address()
            } else if i.op0_kind() == iced_x86::OpKind::NearBranch64 {
                i.near_branch_target()
            } else {
                0
            };
            out.push((i.mnemonic(), target));
        }
        out
    }

    /// The text segment of the ELF file at `path` (its bytes and address) and its function starts
    /// from `.eh_frame_hdr`, as the loader sees them; None when there is no such file.
    pub(super) fn text_and_starts(path: &str) -> Option<(Vec<u8>, u64, Vec<u64>)> {
        let file = crate::sys::MappedFile::open(std::path::Path::new(path)).ok()?;
        let bytes = file.bytes();
        let phs = crate::loader::ehframe::program_headers(bytes).expect("ELF");
        let text = phs
            .iter()
            .find(|p| p.p_type == goblin::elf::program_header::PT_LOAD && p.is_executable())
            .expect("a text segment");
        let code = bytes[text.p_offset as usize..(text.p_offset + text.p_filesz) as usize].to_vec();
        let starts =
            crate::loader::ehframe::starts_in_mapping(bytes, text.p_offset, text.p_vaddr, text.p_filesz);
        Some((code, text.p_vaddr, starts))
    }

    /// The `.eh_frame_hdr` function starts find every site a sweep of the whole text finds, in
    /// the stripped libraries this machine's programs load.
    #[test]
    fn eh_frame_starts_find_every_site_a_linear_sweep_finds() {
        let files = [
            "/lib/x86_64-linux-gnu/libc.so.6",
            "/lib/x86_64-linux-gnu/libm.so.6",
            "/lib/x86_64-linux-gnu/libz.so.1",
            "/usr/bin/python3.11",
            "/usr/bin/racket",
        ];
        for lib in files {
            let Some((code, vaddr, starts)) = text_and_starts(lib) else {
                assert!(!lib.ends_with("libc.so.6"), "libc.so.6 must exist");
                continue;
            };
            let swept = find_sites(&code, vaddr, &[]);
            let with_starts = find_sites(&code, vaddr, &starts);
            // Known function starts only add sites: a weak site (a `syscall` moved with its
            // neighbours) is taken only near a known boundary (`sites.rs`), so the starts may
            // confirm more of them than the sweep's own boundaries do.
            let missing: Vec<_> = swept.iter().filter(|s| !with_starts.contains(s)).collect();
            assert!(
                missing.is_empty(),
                "{lib}: sites the sweep finds and the starts miss: {missing:?}"
            );
            if lib.ends_with("libc.so.6") {
                assert!(swept.len() > 300 && starts.len() > 1000, "{} sites", swept.len());
            }
        }
    }

    #[test]
    fn an_after_thunk_enters_the_stub_runs_the_moved_cmp_and_jumps_past_the_site() {
        use iced_x86::Mnemonic::*;
        let cmp = [0x48, 0x3d, 0x01, 0xf0, 0xff, 0xff];
        let mut bytes = [0xcc; sites::MAX_BEFORE];
        bytes[..6].copy_from_slice(&cmp);
        let site = Site::After(0x401017, sites::Moved { bytes, len: 6 });
        let thunk = 0x200040;
        let (t, at, patch) = thunk_for(site, thunk).expect("in reach");
        assert_eq!(at, 0x401017);
        // `jmp thunk` then int3 over the rest of the syscall and the cmp: 8 bytes.
        assert_eq!(patch.len(), 8);
        assert_eq!(&patch[5..], &[0xcc; 3]);
        let d = decoded(&t, thunk);
        assert_eq!(
            d,
            vec![
                (Lea, thunk + 15),
                (Rdgsbase, 0),
                (Jmp, 0),
                (Cmp, 0),
                (Jmp, 0x401017 + 8)
            ]
        );
        // A restart from the moved cmp (the return address) enters the thunk again.
        assert_eq!(restart_at(thunk + 15), thunk);
    }

    #[test]
    fn a_before_thunk_runs_the_moved_instructions_and_returns_after_the_kept_syscall() {
        use iced_x86::Mnemonic::*;
        let movq = [0x48, 0xc7, 0x04, 0x24, 0x20, 0, 0, 0];
        let mut bytes = [0xcc; sites::MAX_BEFORE];
        bytes[..8].copy_from_slice(&movq);
        let site = Site::Before(0x402000, sites::Moved { bytes, len: 8 });
        let thunk = 0x200060;
        let (t, _, patch) = thunk_for(site, thunk).expect("in reach");
        assert_eq!(patch.len(), 8);
        let d = decoded(&t, thunk);
        assert_eq!(
            d,
            vec![(Mov, 0), (Lea, 0x402000 + 8 + 2), (Rdgsbase, 0), (Jmp, 0)]
        );
    }
}
