//! Which of the guest's areas have host pages at the end of a run (issue #13: where the first
//! touches are). Every page of an area that the guest (or the VMM for it: the loader, a
//! delegated read into a buffer) touched has a host page behind it then, unless it was given
//! back; the area's count of such pages is read from the VMM's own `/proc/self/pagemap`
//! (present or swapped), so file pages in the page cache that the guest never touched do not
//! count. `lwk run -v` / `--summary` list them under `costs.areas` with the guest's own
//! /proc/self/maps names; `populate.rs` is what makes pages before the guest touches them.

use std::os::unix::fs::FileExt;

const PAGE: u64 = 4096;
/// pagemap: the page is present / swapped.
const PRESENT: u64 = 1 << 63;
const SWAPPED: u64 = 1 << 62;

/// One area of the guest's address space and its pages with a host page behind them.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Area {
    /// `start-end` in hex, as /proc/self/maps prints it.
    pub range: String,
    pub perms: String,
    /// The file, `[heap]`, `[stack]`, or empty for anonymous memory.
    pub name: String,
    pub pages: u64,
    pub resident: u64,
}

/// The guest's areas `list` (`Vmas::areas`: start, what it holds) with their resident pages
/// (empty when the VMM cannot read its pagemap).
pub fn areas(list: Vec<(u64, crate::vmas::Vma)>) -> Vec<Area> {
    let file = {
        let _low = crate::sys::low_fds();
        crate::sys::open_proc("self/pagemap", libc::O_RDONLY).map(|fd| {
            use std::os::fd::FromRawFd;
            // SAFETY: `fd` was just opened and is owned by nobody else: the File closes it.
            unsafe { std::fs::File::from_raw_fd(fd) }
        })
    };
    let Ok(file) = file else {
        return Vec::new();
    };
    list.into_iter()
        .map(|(start, v)| {
            let flag = |bit: i32, c: char| if v.prot & bit != 0 { c } else { '-' };
            Area {
                range: format!("{start:x}-{:x}", v.end),
                perms: [
                    flag(libc::PROT_READ, 'r'),
                    flag(libc::PROT_WRITE, 'w'),
                    flag(libc::PROT_EXEC, 'x'),
                    if v.shared { 's' } else { 'p' },
                ]
                .iter()
                .collect(),
                name: v.name.clone(),
                pages: (v.end - start) / PAGE,
                resident: resident(&file, start, v.end),
            }
        })
        .collect()
}

/// Pages of `[a, b)` present or swapped in this process (`pagemap`: 8 bytes a page).
fn resident(pagemap: &std::fs::File, a: u64, b: u64) -> u64 {
    let mut n = 0;
    let mut buf = vec![0u8; 8 * 4096];
    let mut page = a / PAGE;
    let end = b.div_ceil(PAGE);
    while page < end {
        let count = (end - page).min(4096);
        let bytes = &mut buf[..count as usize * 8];
        if pagemap.read_exact_at(bytes, page * 8).is_err() {
            break;
        }
        n += bytes
            .chunks_exact(8)
            .filter(|e| {
                let v = u64::from_le_bytes([e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7]]);
                v & (PRESENT | SWAPPED) != 0
            })
            .count() as u64;
        page += count;
    }
    n
}

/// The resident pages of `areas` by kind: the heap, the stack, anonymous memory, file mappings
/// (`(kind, pages, resident)`).
pub fn by_kind(areas: &[Area]) -> Vec<(&'static str, u64, u64)> {
    let mut out: Vec<(&'static str, u64, u64)> = Vec::new();
    for a in areas {
        let kind = match a.name.as_str() {
            "[heap]" => "heap",
            "[stack]" => "stack",
            "" => "anonymous",
            _ => "file",
        };
        match out.iter_mut().find(|k| k.0 == kind) {
            Some(k) => (k.1, k.2) = (k.1 + a.pages, k.2 + a.resident),
            None => out.push((kind, a.pages, a.resident)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touched_pages_of_a_fresh_mapping_are_counted() {
        let len = 64 * PAGE as usize;
        // SAFETY: a fresh private anonymous mapping, unmapped below; nothing else refers to it.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        let base = p as u64;
        for i in [0u64, 5, 6, 63] {
            // SAFETY: inside the mapping made above.
            unsafe { std::ptr::write_volatile((base + i * PAGE) as *mut u8, 1) };
        }
        let f = std::fs::File::open("/proc/self/pagemap").expect("pagemap");
        assert_eq!(resident(&f, base, base + len as u64), 4);
        assert_eq!(resident(&f, base + PAGE, base + 5 * PAGE), 0);
        // SAFETY: the mapping made above, not used after.
        unsafe { libc::munmap(p, len) };
        let kinds = by_kind(&[
            Area {
                name: "[heap]".into(),
                pages: 4,
                resident: 2,
                ..Default::default()
            },
            Area {
                pages: 3,
                resident: 1,
                ..Default::default()
            },
            Area {
                pages: 5,
                resident: 5,
                ..Default::default()
            },
        ]);
        assert_eq!(kinds, [("heap", 4, 2), ("anonymous", 8, 6)]);
    }
}
