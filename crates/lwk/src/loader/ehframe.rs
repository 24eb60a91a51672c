//! Function starts from an ELF file's `.eh_frame_hdr` (PT_GNU_EH_FRAME): its binary-search table
//! holds the start of every function with unwind information, which compilers emit for every
//! function of x86-64 code, stripped libraries included. They are instruction boundaries, so the
//! syscall-site rewriter (`rewrite.rs`) decodes from the function around each candidate byte
//! pattern instead of sweeping a stripped library whole (libc.so.6: 3 713 functions, 1.4 MB of
//! text that was decoded at every start).

use goblin::container::{Container, Ctx, Endian};
use goblin::elf::program_header::ProgramHeader;

/// PT_GNU_EH_FRAME.
const PT_GNU_EH_FRAME: u32 = 0x6474_e550;
/// DW_EH_PE_datarel | DW_EH_PE_sdata4: the table encoding every x86-64 linker writes.
const TABLE_DATAREL_SDATA4: u8 = 0x3b;

/// The ELF file `bytes`' program headers (64-bit little-endian files only).
pub fn program_headers(bytes: &[u8]) -> Option<Vec<ProgramHeader>> {
    let header = goblin::elf::Elf::parse_header(bytes).ok()?;
    if header.e_ident[goblin::elf::header::EI_CLASS] != goblin::elf::header::ELFCLASS64 {
        return None;
    }
    let ctx = Ctx::new(Container::Big, Endian::Little);
    ProgramHeader::parse(bytes, header.e_phoff as usize, header.e_phnum as usize, ctx).ok()
}

/// Function start addresses (the file's own virtual addresses), sorted, from the
/// `.eh_frame_hdr` table of ELF file `bytes`; empty when it has none the rewriter can read.
pub fn function_starts(bytes: &[u8]) -> Vec<u64> {
    program_headers(bytes)
        .and_then(|phs| {
            let ph = phs.iter().find(|p| p.p_type == PT_GNU_EH_FRAME)?;
            let off = usize::try_from(ph.p_offset).ok()?;
            let hdr = bytes.get(off..off.checked_add(usize::try_from(ph.p_filesz).ok()?)?)?;
            table(hdr, ph.p_vaddr)
        })
        .unwrap_or_default()
}

/// Size of a value of DWARF pointer encoding `enc` (its low four bits), for the formats
/// `.eh_frame_hdr` uses.
fn size_of(enc: u8) -> Option<usize> {
    match enc & 0x0f {
        0x02 | 0x0a => Some(2),
        0x03 | 0x0b => Some(4),
        0x04 | 0x0c => Some(8),
        _ => None,
    }
}

/// The table of `.eh_frame_hdr` bytes `hdr` loaded at `vaddr`: its initial locations.
fn table(hdr: &[u8], vaddr: u64) -> Option<Vec<u64>> {
    let (&version, rest) = hdr.split_first()?;
    let (ptr_enc, count_enc, table_enc) = (*rest.first()?, *rest.get(1)?, *rest.get(2)?);
    if version != 1 || table_enc != TABLE_DATAREL_SDATA4 || ptr_enc == 0xff || count_enc == 0xff {
        return None;
    }
    let mut at = 4 + size_of(ptr_enc)?;
    let count = match size_of(count_enc)? {
        4 => u32::from_le_bytes(hdr.get(at..at + 4)?.try_into().ok()?) as usize,
        8 => usize::try_from(u64::from_le_bytes(hdr.get(at..at + 8)?.try_into().ok()?)).ok()?,
        _ => return None,
    };
    at += size_of(count_enc)?;
    let entries = hdr.get(at..at.checked_add(count.checked_mul(8)?)?)?;
    let mut starts: Vec<u64> = entries
        .chunks_exact(8)
        .map(|e| vaddr.wrapping_add_signed(i32::from_le_bytes([e[0], e[1], e[2], e[3]]) as i64))
        .collect();
    starts.sort_unstable();
    Some(starts)
}

/// The guest addresses of the function starts of the part of file `bytes` at file offset
/// `offset`, `len` bytes, mapped at guest address `addr` (the file's PT_LOAD segments say
/// which virtual addresses that part holds).
pub fn starts_in_mapping(bytes: &[u8], offset: u64, addr: u64, len: u64) -> Vec<u64> {
    let Some(phs) = program_headers(bytes) else {
        return Vec::new();
    };
    let Some(seg) = phs.iter().find(|p| {
        p.p_type == goblin::elf::program_header::PT_LOAD
            && p.p_offset <= offset
            && offset < p.p_offset + p.p_filesz.max(1)
    }) else {
        return Vec::new();
    };
    let vaddr_at_offset = seg.p_vaddr.wrapping_add(offset - seg.p_offset);
    function_starts(bytes)
        .into_iter()
        .filter(|&v| v >= vaddr_at_offset && v - vaddr_at_offset < len)
        .map(|v| addr + (v - vaddr_at_offset))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_gives_sorted_function_starts() {
        // version 1, eh_frame_ptr pcrel|sdata4, count udata4, table datarel|sdata4.
        let mut h = vec![1u8, 0x1b, 0x03, 0x3b];
        h.extend_from_slice(&0i32.to_le_bytes());
        h.extend_from_slice(&2u32.to_le_bytes());
        for (loc, fde) in [(-0x100i32, 0i32), (-0x200, 8)] {
            h.extend_from_slice(&loc.to_le_bytes());
            h.extend_from_slice(&fde.to_le_bytes());
        }
        assert_eq!(table(&h, 0x1000), Some(vec![0xe00, 0xf00]));
        h[3] = 0x1b;
        assert_eq!(table(&h, 0x1000), None, "other table encodings are not read");
        assert_eq!(table(&h[..10], 0x1000), None);
    }

    #[test]
    fn libc_has_a_start_for_every_function_of_its_text() {
        let libc = std::path::Path::new("/lib/x86_64-linux-gnu/libc.so.6");
        let file = crate::sys::MappedFile::open(libc).expect("libc.so.6 (Debian's glibc)");
        let starts = function_starts(file.bytes());
        assert!(starts.len() > 1000, "{} starts", starts.len());
        assert!(starts.windows(2).all(|w| w[0] <= w[1]));
    }
}
