//! Naming guest addresses after the run: the trace's /proc/self/maps says which file (and offset)
//! an address came from, the file's ELF symbol tables (.symtab, else .dynsym) say which function.

use goblin::elf::{program_header::PT_LOAD, Elf};
use std::collections::HashMap;
use std::path::Path;

/// One line of /proc/PID/maps that maps a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub offset: u64,
    pub exec: bool,
    pub path: String,
}

/// Parses the file-backed lines of a maps text (others are skipped).
pub fn parse_maps(text: &str) -> Vec<Mapping> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (range, perms, off) = (f.next()?, f.next()?, f.next()?);
            let (_dev, _ino) = (f.next()?, f.next()?);
            let path = f.collect::<Vec<_>>().join(" ");
            if !path.starts_with('/') {
                return None;
            }
            let (a, b) = range.split_once('-')?;
            Some(Mapping {
                start: u64::from_str_radix(a, 16).ok()?,
                end: u64::from_str_radix(b, 16).ok()?,
                offset: u64::from_str_radix(off, 16).ok()?,
                exec: perms.contains('x'),
                path,
            })
        })
        .collect()
}

/// A file's functions: (start, size, name), sorted by start, and its PT_LOAD segments
/// (vaddr, file offset, file size).
struct Table {
    funcs: Vec<(u64, u64, String)>,
    loads: Vec<(u64, u64, u64)>,
}

impl Table {
    fn read(path: &str) -> Option<Table> {
        let bytes = std::fs::read(Path::new(path)).ok()?;
        let elf = Elf::parse(&bytes).ok()?;
        let loads = elf
            .program_headers
            .iter()
            .filter(|p| p.p_type == PT_LOAD)
            .map(|p| (p.p_vaddr, p.p_offset, p.p_filesz))
            .collect();
        let mut funcs = functions(&elf.syms, &elf.strtab);
        if funcs.is_empty() {
            funcs = functions(&elf.dynsyms, &elf.dynstrtab);
        }
        funcs.sort_by_key(|f| (f.0, std::cmp::Reverse(f.1)));
        Some(Table { funcs, loads })
    }

    /// The function containing file offset `off`.
    fn at_offset(&self, off: u64) -> Option<&str> {
        let &(vaddr, foff, _) = self.loads.iter().find(|&&(_, o, sz)| off >= o && off < o + sz)?;
        let v = off - foff + vaddr;
        let i = self.funcs.partition_point(|f| f.0 <= v);
        self.funcs[..i]
            .iter()
            .rev()
            .take(8)
            .find(|f| v < f.0 + f.1.max(1))
            .map(|f| f.2.as_str())
    }
}

/// The function symbols of one table: (start, size, name).
fn functions(syms: &goblin::elf::Symtab<'_>, strs: &goblin::strtab::Strtab<'_>) -> Vec<(u64, u64, String)> {
    syms.iter()
        .filter(|s| s.is_function() && s.st_value != 0)
        .filter_map(|s| Some((s.st_value, s.st_size, strs.get_at(s.st_name)?.to_string())))
        .collect()
}

/// Names addresses of one run.
pub struct Symbolizer {
    maps: Vec<Mapping>,
    tables: HashMap<String, Option<Table>>,
}

impl Symbolizer {
    pub fn new(maps_text: &str) -> Self {
        Symbolizer {
            maps: parse_maps(maps_text),
            tables: HashMap::new(),
        }
    }

    /// `function` (in `file`), or `file+0xoff` when the file has no symbol there, or None when
    /// no file maps the address.
    pub fn name(&mut self, addr: u64) -> Option<String> {
        let m = self
            .maps
            .iter()
            .find(|m| addr >= m.start && addr < m.end)?
            .clone();
        let off = addr - m.start + m.offset;
        let base = Path::new(&m.path)
            .file_name()
            .map_or(m.path.clone(), |f| f.to_string_lossy().into_owned());
        let table = self
            .tables
            .entry(m.path.clone())
            .or_insert_with(|| Table::read(&m.path));
        Some(match table.as_ref().and_then(|t| t.at_offset(off)) {
            Some(f) => format!("{f} ({base})"),
            None => format!("{base}+{off:#x}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_with_files_are_parsed_and_anonymous_ones_skipped() {
        let text = "00400000-00401000 r-xp 00001000 08:01 123 /usr/bin/true\n\
                    7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n\
                    7f0000002000-7f0000003000 rw-p 00000000 00:00 0 [stack]\n";
        let m = parse_maps(text);
        assert_eq!(m.len(), 1);
        assert_eq!(
            (m[0].start, m[0].end, m[0].offset, m[0].exec),
            (0x40_0000, 0x40_1000, 0x1000, true)
        );
        assert_eq!(m[0].path, "/usr/bin/true");
    }

    #[test]
    fn an_address_in_this_test_binary_names_a_function() {
        // The running test binary's own map: this function's address must name a function of it.
        let maps = std::fs::read_to_string("/proc/self/maps").expect("test setup");
        let mut s = Symbolizer::new(&maps);
        let here = an_address_in_this_test_binary_names_a_function as *const () as usize as u64;
        let name = s.name(here).expect("the test binary maps its own code");
        assert!(
            name.contains("an_address_in_this_test_binary_names_a_function"),
            "{name}"
        );
    }
}
