//! Loading ELF programs (and their interpreter) into the application window.

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

/// Loads `path`. A non-PIE program goes at its link address; a PIE program at `pie_base`, or, when
/// `pie_base` is None, wherever `mm` finds room (how the interpreter is placed).
pub fn load(
    path: &Path,
    mem: &GuestMemory,
    mm: &mut Mm,
    pie_base: Option<u64>,
    low: bool,
) -> Result<Image, ElfError> {
    // Mapped, not read: only the pages of the headers, the loaded segments and the symbol
    // tables are touched (Racket's 44 MB executable loads 1 MB; reading it all cost ≈ 10 000
    // page faults of the VMM per run).
    let file = crate::sys::MappedFile::open(path).map_err(|source| ElfError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let bytes = file.bytes();
    let elf = Elf::parse(bytes).map_err(|e| parse_err(path, e))?;
    if !elf.is_64 || elf.header.e_machine != goblin::elf::header::EM_X86_64 {
        return Err(parse_err(path, "not an x86-64 64-bit ELF"));
    }
    let loads: Vec<_> = elf
        .program_headers
        .iter()
        .filter(|p| p.p_type == ph::PT_LOAD)
        .collect();
    let lo = loads
        .iter()
        .map(|p| p.p_vaddr / PAGE * PAGE)
        .min()
        .ok_or_else(|| parse_err(path, "no PT_LOAD segment"))?;
    let hi = loads.iter().map(|p| p.p_vaddr + p.p_memsz).max().unwrap_or(lo);
    let span = hi - lo;
    let bias = match elf.header.e_type {
        goblin::elf::header::ET_EXEC => 0,
        goblin::elf::header::ET_DYN => {
            let base = match pie_base {
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
            base - lo
        }
        t => return Err(parse_err(path, format!("ELF type {t} is neither EXEC nor DYN"))),
    };
    let (wlo, whi) = (mem.app.base, mem.app.end());
    if lo + bias < wlo || hi + bias > whi {
        return Err(ElfError::OutsideWindow {
            path: path.to_path_buf(),
            lo: lo + bias,
            hi: hi + bias,
            wlo,
            whi,
        });
    }
    for p in &loads {
        let file = bytes
            .get(p.p_offset as usize..(p.p_offset + p.p_filesz) as usize)
            .ok_or_else(|| parse_err(path, "segment beyond the end of the file"))?;
        mem.write(p.p_vaddr + bias, file);
    }
    mm.reserve(lo + bias, span);
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
        + bias;
    let exec = loads
        .iter()
        .filter(|p| p.is_executable())
        .map(|p| (p.p_vaddr + bias, p.p_filesz))
        .collect();
    let mut symbols = Vec::new();
    for s in elf.syms.iter().filter(|s| s.is_function() && s.st_value != 0) {
        if let Some(n) = elf.strtab.get_at(s.st_name) {
            symbols.push((s.st_value + bias, s.st_size, n.to_string()));
        }
    }
    Ok(Image {
        bias,
        entry: elf.entry + bias,
        phdr,
        phnum: elf.program_headers.len() as u64,
        phent: elf.header.e_phentsize as u64,
        lo: lo + bias,
        hi: hi + bias,
        interp: elf.interpreter.map(str::to_string),
        exec,
        symbols,
        code_starts: super::ehframe::function_starts(bytes)
            .into_iter()
            .map(|v| v + bias)
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
                let start = (p.p_vaddr + bias) / PAGE * PAGE;
                let end = (p.p_vaddr + bias + p.p_memsz).div_ceil(PAGE) * PAGE;
                (start, end, p.p_offset / PAGE * PAGE, prot)
            })
            .collect(),
    })
}
