//! Loading ELF programs (and their interpreter) into the application window.

use super::exefile::ExeFile;
use crate::memory::GuestMemory;
use crate::mm::{Effects, Mm, PAGE};
use goblin::elf::{program_header as ph, Elf};
use std::path::{Path, PathBuf};

/// Errors while loading a program.
#[derive(Debug, thiserror::Error)]
pub enum ElfError {
    #[error("cannot read program '{path}': {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("'{path}' is not an ELF file the LWK can run: {reason}")]
    Parse { path: PathBuf, reason: String },
    #[error(
        "'{path}' is linked at {lo:#x}..{hi:#x}, outside the application window {wlo:#x}..{whi:#x} \
         (raise --mem, or build it as PIE)"
    )]
    OutsideWindow {
        path: PathBuf,
        lo: u64,
        hi: u64,
        wlo: u64,
        whi: u64,
    },
    #[error("no room in guest memory for '{path}' ({len} bytes): raise --mem-mib")]
    NoRoom { path: PathBuf, len: u64 },
}

/// A program image in guest memory.
#[derive(Debug, Clone, Default)]
pub struct Image {
    /// Load bias (0 for ET_EXEC).
    pub bias: u64,
    pub entry: u64,
    pub phdr: u64,
    pub phnum: u64,
    pub phent: u64,
    /// Lowest and highest mapped addresses.
    pub lo: u64,
    pub hi: u64,
    pub interp: Option<String>,
    /// Executable segments in guest memory (address, length of the file-backed part).
    pub exec: Vec<(u64, u64)>,
    /// Function symbols (address, size, name), for fault reports.
    pub symbols: Vec<(u64, u64, String)>,
    /// Function starts from the file's `.eh_frame_hdr` (guest addresses, sorted): instruction
    /// boundaries for the syscall-site rewriter, stripped files included (`ehframe.rs`).
    pub code_starts: Vec<u64>,
    /// The file it was loaded from.
    pub path: std::path::PathBuf,
    /// PT_LOAD segments in guest memory, for /proc/self/maps: (start, end, file offset, PROT_*),
    /// page-aligned.
    pub segments: Vec<(u64, u64, u64, i32)>,
}

impl Image {
    /// The symbol containing `addr`, as `name+0xoff`.
    pub fn symbolize(&self, addr: u64) -> Option<String> {
        self.symbols
            .iter()
            .filter(|(a, s, _)| addr >= *a && addr < a + (*s).max(1))
            .min_by_key(|(a, _, _)| addr - a)
            .map(|(a, _, n)| format!("{n}+{:#x}", addr - a))
    }
}

fn parse_err(path: &Path, reason: impl ToString) -> ElfError {
    ElfError::Parse {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

/// Where a shared object run as the main program (ET_DYN with a DT_SONAME and no PT_INTERP: ld.so,
/// as `ldd` and `ld.so PROG` run it) goes in the window `[wlo, whi)`. Linux puts such a program
/// at the mmap base, far from where ET_EXEC programs are linked, so that ld.so can then map a
/// non-PIE program at its fixed address (0x400000); at APP_BASE the two collided. Here it goes a
/// quarter of the window (at most 1 GiB, 2 MiB-aligned) above the window's start: the range below
/// stays free for such a program (its break and the mmap area come after the loader, as for any
/// program), and the loader's syscall sites stay within rel32 reach of the thunks. A static PIE
/// (no DT_SONAME) loads nothing at a fixed address and keeps APP_BASE and the whole window.
pub fn unlinked_base(wlo: u64, whi: u64) -> u64 {
    const ALIGN: u64 = 2 << 20;
    wlo + ((whi - wlo) / 4).min(1 << 30) / ALIGN * ALIGN
}

/// Refuses a PT_LOAD segment Linux refuses (`load_elf_binary`, `elf_map`): more file than memory,
/// an end that overflows, file bytes past the end of the file, or a file offset not congruent
/// with the address modulo the page size (the mapping's offset would not be page-aligned).
fn check_segment(path: &Path, p: &ph::ProgramHeader, file_len: u64) -> Result<(), ElfError> {
    let bad = |why: String| Err(parse_err(path, why));
    if p.p_filesz > p.p_memsz {
        return bad(format!(
            "a PT_LOAD segment at {:#x} has more file bytes ({:#x}) than memory ({:#x})",
            p.p_vaddr, p.p_filesz, p.p_memsz
        ));
    }
    if p.p_vaddr.checked_add(p.p_memsz).is_none() {
        return bad(format!(
            "a PT_LOAD segment at {:#x} of {:#x} bytes ends past the address space",
            p.p_vaddr, p.p_memsz
        ));
    }
    if p.p_offset.checked_add(p.p_filesz).is_none_or(|e| e > file_len) {
        return bad(format!(
            "a PT_LOAD segment at {:#x} lies beyond the end of the file",
            p.p_vaddr
        ));
    }
    if p.p_offset % PAGE != p.p_vaddr % PAGE {
        return bad(format!(
            "a PT_LOAD segment's file offset {:#x} and address {:#x} differ modulo the page size",
            p.p_offset, p.p_vaddr
        ));
    }
    Ok(())
}

/// The program's interpreter, from its first PT_INTERP as Linux reads it: a NUL-terminated path
/// of 2..=4096 bytes inside the file (ENOEXEC otherwise). goblin's answer was the last PT_INTERP,
/// dropped a malformed one silently (the program then ran without its interpreter) and cut an
/// unterminated path short.
fn interpreter(path: &Path, headers: &[ph::ProgramHeader], bytes: &[u8]) -> Result<Option<String>, ElfError> {
    let Some(p) = headers.iter().find(|p| p.p_type == ph::PT_INTERP) else {
        return Ok(None);
    };
    let raw = p
        .p_offset
        .checked_add(p.p_filesz)
        .filter(|_| (2..=4096).contains(&p.p_filesz))
        .and_then(|end| bytes.get(p.p_offset as usize..end as usize))
        .ok_or_else(|| parse_err(path, "its PT_INTERP does not lie in the file or has a bad length"))?;
    let name = raw
        .strip_suffix(&[0])
        .filter(|n| !n.contains(&0))
        .ok_or_else(|| parse_err(path, "its PT_INTERP path is not a NUL-terminated string"))?;
    std::str::from_utf8(name)
        .map(|n| Some(n.to_string()))
        .map_err(|_| parse_err(path, "its PT_INTERP path is not UTF-8 (not supported by the LWK)"))
}

/// The interpreter `file`'s PT_INTERP names, read from its program headers alone: what execve
/// opens before its point of no return (Linux's `load_elf_binary` does), so that a missing or
/// non-executable interpreter is the caller's ENOENT or EACCES rather than the end of the process.
pub fn interpreter_of(file: &ExeFile) -> Result<Option<String>, ElfError> {
    let path = file.path.as_path();
    let mapped = file.map().map_err(|source| ElfError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let bytes = mapped.bytes();
    let headers =
        super::ehframe::program_headers(bytes).ok_or_else(|| parse_err(path, "not a 64-bit ELF file"))?;
    interpreter(path, &headers, bytes)
}

/// Loads `file`. A non-PIE program goes at its link address; a PIE program at `pie_base` (the
/// main program; ld.so at [`unlinked_base`] instead), or, when `pie_base` is
/// None, wherever `mm` finds room (how the interpreter is placed).
pub fn load(
    file: &ExeFile,
    mem: &GuestMemory,
    mm: &mut Mm,
    pie_base: Option<u64>,
    low: bool,
) -> Result<Image, ElfError> {
    // Mapped, not read: only the pages of the headers, the loaded segments and the symbol
    // tables are touched (Racket's 44 MB executable loads 1 MB; reading it all cost ≈ 10 000
    // page faults of the VMM per run).
    let path = file.path.as_path();
    let file = file.map().map_err(|source| ElfError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let bytes = file.bytes();
    let elf = Elf::parse(bytes).map_err(|e| parse_err(path, e))?;
    if !elf.is_64 || elf.header.e_machine != goblin::elf::header::EM_X86_64 {
        return Err(parse_err(path, "not an x86-64 64-bit ELF"));
    }
    // Linux maps nothing for an empty PT_LOAD; a segment it would refuse is refused here before
    // any address is computed from it (a wrapped end passed the window check below and the file
    // bytes went to the LWK's own pages: the guest's code ran in ring 0).
    let loads: Vec<_> = elf
        .program_headers
        .iter()
        .filter(|p| p.p_type == ph::PT_LOAD && p.p_memsz > 0)
        .collect();
    for p in &loads {
        check_segment(path, p, bytes.len() as u64)?;
    }
    let lo = loads
        .iter()
        .map(|p| p.p_vaddr / PAGE * PAGE)
        .min()
        .ok_or_else(|| parse_err(path, "no PT_LOAD segment"))?;
    // No overflow: check_segment bounded every p_vaddr + p_memsz.
    let hi = loads.iter().map(|p| p.p_vaddr + p.p_memsz).max().unwrap_or(lo);
    let span = hi - lo;
    let interp = interpreter(path, &elf.program_headers, bytes)?;
    let bias = match elf.header.e_type {
        goblin::elf::header::ET_EXEC => 0,
        goblin::elf::header::ET_DYN => {
            let base = match pie_base {
                Some(_) if elf.interpreter.is_none() && elf.soname.is_some() => {
                    unlinked_base(mem.app.base, mem.app.end())
                }
                Some(b) => b,
                None if low => mm.mmap_low(span).map_err(|_| ElfError::NoRoom {
                    path: path.to_path_buf(),
                    len: span,
                })?,
                None => mm
                    .mmap(0, span, false, &mut Effects::default())
                    .map_err(|_| ElfError::NoRoom {
                        path: path.to_path_buf(),
                        len: span,
                    })?,
            };
            base.wrapping_sub(lo)
        }
        t => return Err(parse_err(path, format!("ELF type {t} is neither EXEC nor DYN"))),
    };
    let (wlo, whi) = (mem.app.base, mem.app.end());
    // Every segment, relocated, inside the window (not only the lowest and highest ends).
    let outside = |a: u64, len: u64| a < wlo || a.checked_add(len).is_none_or(|e| e > whi);
    if outside(lo.wrapping_add(bias), span)
        || loads
            .iter()
            .any(|p| outside(p.p_vaddr.wrapping_add(bias), p.p_memsz))
    {
        return Err(ElfError::OutsideWindow {
            path: path.to_path_buf(),
            lo: lo.wrapping_add(bias),
            hi: hi.wrapping_add(bias),
            wlo,
            whi,
        });
    }
    for p in &loads {
        // In the file and no longer than the segment (check_segment).
        let file = &bytes[p.p_offset as usize..(p.p_offset + p.p_filesz) as usize];
        mem.write(p.p_vaddr.wrapping_add(bias), file);
    }
    mm.reserve(lo.wrapping_add(bias), span);
    let phdr = elf
        .program_headers
        .iter()
        .find(|p| p.p_type == ph::PT_PHDR)
        .map(|p| p.p_vaddr)
        .or_else(|| {
            loads
                .iter()
                .find(|p| elf.header.e_phoff >= p.p_offset && elf.header.e_phoff < p.p_offset + p.p_filesz)
                .map(|p| p.p_vaddr + (elf.header.e_phoff - p.p_offset))
        })
        .unwrap_or(0)
        .wrapping_add(bias);
    let exec = loads
        .iter()
        .filter(|p| p.is_executable())
        .map(|p| (p.p_vaddr.wrapping_add(bias), p.p_filesz))
        .collect();
    let mut symbols = Vec::new();
    for s in elf.syms.iter().filter(|s| s.is_function() && s.st_value != 0) {
        if let Some(n) = elf.strtab.get_at(s.st_name) {
            symbols.push((s.st_value.wrapping_add(bias), s.st_size, n.to_string()));
        }
    }
    Ok(Image {
        bias,
        entry: elf.entry.wrapping_add(bias),
        phdr,
        phnum: elf.program_headers.len() as u64,
        phent: elf.header.e_phentsize as u64,
        lo: lo.wrapping_add(bias),
        hi: hi.wrapping_add(bias),
        interp,
        exec,
        symbols,
        code_starts: super::ehframe::function_starts(bytes)
            .into_iter()
            .map(|v| v.wrapping_add(bias))
            .collect(),
        path: path.to_path_buf(),
        segments: loads
            .iter()
            .map(|p| {
                let prot = [
                    (ph::PF_R, libc::PROT_READ),
                    (ph::PF_W, libc::PROT_WRITE),
                    (ph::PF_X, libc::PROT_EXEC),
                ]
                .iter()
                .filter(|(f, _)| p.p_flags & f != 0)
                .fold(0, |a, (_, b)| a | b);
                let start = p.p_vaddr.wrapping_add(bias) / PAGE * PAGE;
                let end = (p.p_vaddr.wrapping_add(bias) + p.p_memsz).div_ceil(PAGE) * PAGE;
                (start, end, p.p_offset / PAGE * PAGE, prot)
            })
            .collect(),
    })
}
