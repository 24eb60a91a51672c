//! The guest's view of its own address space, for /proc/self/maps (as McKernel answers it from
//! the LWK's view): what each range of the window holds — the program's and interpreter's
//! segments, file mappings with their offset, device and inode, anonymous memory with its
//! protection — kept beside the memory manager's bookkeeping (`mm.rs`, which only knows which
//! ranges are in use). The VMM's own mappings never appear.

use crate::mm::{Mm, PAGE};
use std::collections::BTreeMap;

/// What one range of the window holds (its start is the key in [`Vmas`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Vma {
    pub end: u64,
    pub prot: i32,
    pub shared: bool,
    /// File offset of the range's start (0 for anonymous memory).
    pub offset: u64,
    pub dev: u64,
    pub ino: u64,
    /// The file's path (empty for anonymous memory).
    pub name: String,
}

/// The annotated ranges of the window; ranges the memory manager uses without an entry here are
/// private anonymous read-write memory.
#[derive(Debug, Default, Clone)]
pub struct Vmas(BTreeMap<u64, Vma>);

impl Vmas {
    /// Forgets `[a, b)`, splitting entries that straddle it.
    pub fn remove(&mut self, a: u64, b: u64) {
        // Entries are disjoint, so their ends grow with their starts: walk down from `b`.
        let hits: Vec<(u64, Vma)> = self
            .0
            .range(..b)
            .rev()
            .take_while(|(_, v)| v.end > a)
            .map(|(&s, v)| (s, v.clone()))
            .collect();
        for (s, v) in hits {
            self.0.remove(&s);
            if s < a {
                self.0.insert(s, Vma { end: a, ..v.clone() });
            }
            if v.end > b {
                let offset = if v.name.is_empty() { 0 } else { v.offset + (b - s) };
                self.0.insert(b, Vma { offset, ..v });
            }
        }
    }

    /// Records `[a, vma.end)`.
    pub fn insert(&mut self, a: u64, vma: Vma) {
        // An empty entry would stop the walks over the view (`protections` looped for ever on
        // one: an empty PT_LOAD of a crafted ELF).
        if vma.end <= a {
            return;
        }
        self.remove(a, vma.end);
        self.0.insert(a, vma);
    }

    /// The entry containing `a`.
    pub fn at(&self, a: u64) -> Option<(u64, &Vma)> {
        self.0
            .range(..=a)
            .next_back()
            .filter(|(_, v)| v.end > a)
            .map(|(&s, v)| (s, v))
    }

    /// The start of the first entry in `[pos, end)`, or `end` (where unannotated memory at `pos`
    /// ends).
    pub fn next_start(&self, pos: u64, end: u64) -> u64 {
        self.0.range(pos..end).next().map_or(end, |(&n, _)| n)
    }

    /// mprotect of `[a, b)`: anonymous gaps get entries of their own so that the protection shows.
    pub fn protect(&mut self, a: u64, b: u64, prot: i32, mm: &Mm) {
        let mut parts: Vec<(u64, Vma)> = Vec::new();
        for (s, e) in mm.maps.intersections(a, b) {
            let mut pos = s;
            while pos < e {
                let (end, vma) = match self.at(pos) {
                    Some((vs, v)) => {
                        let end = v.end.min(e);
                        let offset = if v.name.is_empty() {
                            0
                        } else {
                            v.offset + (pos - vs)
                        };
                        (
                            end,
                            Vma {
                                end,
                                prot,
                                offset,
                                ..v.clone()
                            },
                        )
                    }
                    None => {
                        let end = self.0.range(pos..e).next().map_or(e, |(&n, _)| n);
                        (
                            end,
                            Vma {
                                end,
                                prot,
                                ..Vma::default()
                            },
                        )
                    }
                };
                parts.push((pos, vma));
                pos = end;
            }
        }
        for (s, v) in parts {
            self.insert(s, v);
        }
    }

    /// The protections the page tables must give the 512 pages of the 2 MiB page at `chunk`
    /// (`pagetable::bits`): the brk heap and unannotated ranges in use read-write, annotated
    /// ranges their protection, the rest unmapped (issue #14).
    pub fn protections(&self, mm: &Mm, chunk: u64) -> crate::pagetable::Chunk {
        use crate::pagetable::bits;
        let rw = Some(libc::PROT_READ | libc::PROT_WRITE);
        let end = chunk + crate::memory::PAGE_2M;
        let mut out = [0u64; 512];
        let mut fill = |s: u64, e: u64, prot: Option<i32>| {
            let b = bits(prot);
            for k in ((s - chunk) / PAGE)..((e - chunk) / PAGE) {
                out[k as usize] = b;
            }
        };
        let heap = (
            mm.brk_start.max(chunk),
            (mm.brk_cur.div_ceil(PAGE) * PAGE).min(end),
        );
        if heap.0 < heap.1 {
            fill(heap.0, heap.1, rw);
        }
        for (s, e) in mm.maps.intersections(chunk, end) {
            let mut pos = s;
            while pos < e {
                let (next, prot) = match self.at(pos) {
                    Some((_, v)) => (v.end.min(e), Some(v.prot)),
                    None => (self.0.range(pos..e).next().map_or(e, |(&n, _)| n), rw),
                };
                fill(pos, next, prot);
                pos = next;
            }
        }
        out
    }

    /// True when mprotect of `[a, b)` to `prot` would take some access (read, write or execute)
    /// away from a page in use (the brk heap and unannotated ranges count as read-write).
    pub fn takes_away(&self, mm: &Mm, a: u64, b: u64, prot: i32) -> bool {
        let rwx = libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC;
        let lost = |old: i32| old & rwx & !prot != 0;
        let rw = libc::PROT_READ | libc::PROT_WRITE;
        let heap_end = mm.brk_cur.div_ceil(PAGE) * PAGE;
        if a.max(mm.brk_start) < b.min(heap_end) && lost(rw) {
            return true;
        }
        mm.maps.intersections(a, b).into_iter().any(|(s, e)| {
            let mut pos = s;
            while pos < e {
                let (next, old) = match self.at(pos) {
                    Some((_, v)) => (v.end.min(e), v.prot),
                    None => (self.0.range(pos..e).next().map_or(e, |(&n, _)| n), rw),
                };
                if lost(old) {
                    return true;
                }
                pos = next;
            }
            false
        })
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// The text of /proc/self/maps for the window `mm` manages, in Linux's format.
    pub fn render(&self, mm: &Mm) -> String {
        self.areas(mm).iter().map(|(s, v)| line(*s, v)).collect()
    }

    /// The areas /proc/self/maps lists for the window `mm` manages (start, what it holds), in
    /// address order.
    pub fn areas(&self, mm: &Mm) -> Vec<(u64, Vma)> {
        let (lo, hi) = mm.window;
        let stack = (hi - mm.stack, hi);
        let heap_end = mm.brk_cur.div_ceil(PAGE) * PAGE;
        let mut pieces: Vec<(u64, Vma)> = Vec::new();
        for (s, e) in mm.maps.intersections(lo, hi) {
            let mut pos = s;
            while pos < e {
                match self.at(pos) {
                    Some((vs, v)) => {
                        let end = v.end.min(e);
                        let offset = if v.name.is_empty() {
                            0
                        } else {
                            v.offset + (pos - vs)
                        };
                        pieces.push((
                            pos,
                            Vma {
                                end,
                                offset,
                                ..v.clone()
                            },
                        ));
                        pos = end;
                    }
                    None => {
                        let end = self.0.range(pos..e).next().map_or(e, |(&n, _)| n);
                        let name = if pos >= stack.0 { "[stack]" } else { "" };
                        let prot = libc::PROT_READ | libc::PROT_WRITE;
                        pieces.push((
                            pos,
                            Vma {
                                end,
                                prot,
                                name: name.into(),
                                ..Vma::default()
                            },
                        ));
                        pos = end;
                    }
                }
            }
        }
        if heap_end > mm.brk_start {
            let prot = libc::PROT_READ | libc::PROT_WRITE;
            pieces.push((
                mm.brk_start,
                Vma {
                    end: heap_end,
                    prot,
                    name: "[heap]".into(),
                    ..Vma::default()
                },
            ));
        }
        pieces.sort_by_key(|p| p.0);
        // Adjacent anonymous ranges with the same attributes are one area, as in Linux.
        let mut merged: Vec<(u64, Vma)> = Vec::new();
        for (s, v) in pieces {
            if let Some((_, last)) = merged.last_mut() {
                let anon = v.ino == 0 && last.ino == 0;
                if anon
                    && last.end == s
                    && last.prot == v.prot
                    && last.shared == v.shared
                    && last.name == v.name
                {
                    last.end = v.end;
                    continue;
                }
            }
            merged.push((s, v));
        }
        merged
    }
}

/// One line of /proc/PID/maps: `start-end perms offset major:minor inode`, then the name from
/// column 74 (anonymous lines end with a space, as Linux prints them).
fn line(start: u64, v: &Vma) -> String {
    let flag = |bit: i32, c: char| if v.prot & bit != 0 { c } else { '-' };
    let head = format!(
        "{:08x}-{:08x} {}{}{}{} {:08x} {:02x}:{:02x} {} ",
        start,
        v.end,
        flag(libc::PROT_READ, 'r'),
        flag(libc::PROT_WRITE, 'w'),
        flag(libc::PROT_EXEC, 'x'),
        if v.shared { 's' } else { 'p' },
        v.offset,
        libc::major(v.dev),
        libc::minor(v.dev),
        v.ino
    );
    if v.name.is_empty() {
        format!("{head}\n")
    } else {
        format!("{head:<73}{}\n", v.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_look_like_linux() {
        let mut mm = Mm::new(0x40_0000, 0x40_0000 + (64 << 20), 0x40_2000);
        let mut fx = crate::mm::Effects::default();
        mm.brk(mm.brk_start + 0x3000, &mut fx);
        let mut v = Vmas::default();
        v.insert(
            0x40_0000,
            Vma {
                end: 0x40_1000,
                prot: libc::PROT_READ,
                offset: 0,
                dev: libc::makedev(0xfe, 0),
                ino: 7,
                name: "/bin/x".into(),
                ..Vma::default()
            },
        );
        v.insert(
            0x40_1000,
            Vma {
                end: 0x40_2000,
                prot: libc::PROT_READ | libc::PROT_EXEC,
                offset: 0x1000,
                dev: libc::makedev(0xfe, 0),
                ino: 7,
                name: "/bin/x".into(),
                ..Vma::default()
            },
        );
        let text = v.render(&mm);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "00400000-00401000 r--p 00000000 fe:00 7                                  /bin/x"
        );
        assert_eq!(&lines[1][..31], "00401000-00402000 r-xp 00001000");
        assert!(
            lines[2].starts_with("00402000-00405000 rw-p 00000000 00:00 0 ") && lines[2].ends_with("[heap]")
        );
        assert!(lines[3].ends_with(" [stack]"), "{text}");
        assert_eq!(lines.len(), 4, "{text}");
        v.remove(0x40_0800, 0x40_1800);
        assert_eq!(
            v.at(0x40_1800).map(|(s, x)| (s, x.offset)),
            Some((0x40_1800, 0x1800))
        );
        assert!(v.at(0x40_0900).is_none());
    }

    #[test]
    fn issue_14_protections_follow_mappings_heap_and_vmas() {
        use crate::memory::{PTE_NX, PTE_P, PTE_RW, PTE_US};
        let mut mm = Mm::new(0x40_0000, 0x40_0000 + (64 << 20), 0x40_2000);
        let mut fx = crate::mm::Effects::default();
        mm.brk(mm.brk_start + 0x1800, &mut fx);
        let mut v = Vmas::default();
        let image = |prot| Vma {
            end: 0,
            prot,
            ino: 7,
            name: "/bin/x".into(),
            ..Vma::default()
        };
        v.insert(
            0x40_0000,
            Vma {
                end: 0x40_1000,
                ..image(libc::PROT_READ | libc::PROT_EXEC)
            },
        );
        v.insert(
            0x40_1000,
            Vma {
                end: 0x40_2000,
                ..image(libc::PROT_NONE)
            },
        );
        let c = v.protections(&mm, 0x40_0000);
        assert_eq!(c[0], PTE_P | PTE_US);
        assert_eq!(c[1], 0, "PROT_NONE is not present");
        assert_eq!(c[2], PTE_P | PTE_US | PTE_RW | PTE_NX, "the heap");
        assert_eq!(
            c[3],
            PTE_P | PTE_US | PTE_RW | PTE_NX,
            "the heap's last, partial page"
        );
        assert_eq!(c[4], 0, "above the break: unmapped");
        let top = v.protections(&mm, 0x40_0000 + (62 << 20));
        assert!(
            top.iter().all(|&b| b == PTE_P | PTE_US | PTE_RW | PTE_NX),
            "the stack"
        );
    }

    #[test]
    fn issue_15_takes_away_tells_a_tightening_mprotect_from_a_loosening_one() {
        let mut mm = Mm::new(0x40_0000, 0x40_0000 + (64 << 20), 0x40_2000);
        let mut fx = crate::mm::Effects::default();
        mm.brk(mm.brk_start + 0x3000, &mut fx);
        let anon = mm.mmap(0, 0x4000, false, &mut fx).expect("room for 16 KiB");
        let mut v = Vmas::default();
        let (r, rw, rwx) = (libc::PROT_READ, libc::PROT_READ | libc::PROT_WRITE, 7);
        // Unannotated anonymous memory and the heap are read-write.
        assert!(v.takes_away(&mm, anon, anon + 0x1000, r));
        assert!(!v.takes_away(&mm, anon, anon + 0x4000, rw));
        assert!(!v.takes_away(&mm, anon, anon + 0x4000, rwx));
        assert!(v.takes_away(&mm, mm.brk_start, mm.brk_start + 0x1000, libc::PROT_NONE));
        // A guard page made PROT_NONE, then given access back: loosening, nothing taken.
        v.protect(anon, anon + 0x1000, libc::PROT_NONE, &mm);
        assert!(!v.takes_away(&mm, anon, anon + 0x1000, rw));
        // W^X: read-execute to read-write takes execute away.
        v.protect(
            anon + 0x1000,
            anon + 0x2000,
            libc::PROT_READ | libc::PROT_EXEC,
            &mm,
        );
        assert!(v.takes_away(&mm, anon + 0x1000, anon + 0x2000, rw));
        assert!(!v.takes_away(&mm, anon + 0x1000, anon + 0x2000, rwx));
        // Unmapped memory has nothing to take.
        assert!(!v.takes_away(&mm, anon + (32 << 20), anon + (33 << 20), libc::PROT_NONE));
    }
}
