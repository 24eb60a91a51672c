//! The process's own mappings, read from /proc/self/maps: what the guest may see and how.

use std::io;

/// One mapping of the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vma {
    pub start: u64,
    pub end: u64,
    /// PROT_READ | PROT_WRITE | PROT_EXEC bits.
    pub prot: i32,
}

/// Parses the text of /proc/self/maps; lines that do not parse are skipped. Mappings in the
/// kernel half ([vsyscall]) are left out: the guest's tables cover the user half only.
pub fn parse(text: &str) -> Vec<Vma> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut f = line.split_ascii_whitespace();
        let (Some(range), Some(perms)) = (f.next(), f.next()) else {
            continue;
        };
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) else {
            continue;
        };
        if end > USER_END || start >= end {
            continue;
        }
        let p = perms.as_bytes();
        let mut prot = 0;
        if p.first() == Some(&b'r') {
            prot |= libc::PROT_READ;
        }
        if p.get(1) == Some(&b'w') {
            prot |= libc::PROT_WRITE;
        }
        if p.get(2) == Some(&b'x') {
            prot |= libc::PROT_EXEC;
        }
        out.push(Vma { start, end, prot });
    }
    out
}

/// The end of the user half.
pub const USER_END: u64 = 0x8000_0000_0000;

/// Reads /proc/self/maps without allocating: it runs on a vCPU's thread while the guest may hold
/// a lock of malloc (a function that faults inside malloc), so the buffer is made once, up front,
/// and the file is read with raw calls.
pub struct Reader {
    buf: Box<[u8]>,
    /// /proc/self/maps kept open for PROCMAP_QUERY (-1: not yet).
    query_fd: i32,
    /// False once the kernel said it has no PROCMAP_QUERY.
    query: bool,
}

/// One line's mapping, if it parses and lies in the user half.
fn parse_line(line: &[u8]) -> Option<Vma> {
    let text = std::str::from_utf8(line.get(..line.len().min(80))?).ok()?;
    let mut v = parse(text.split('\n').next()?);
    v.pop()
}

impl Default for Reader {
    fn default() -> Self {
        Reader {
            buf: vec![0u8; 64 << 10].into_boxed_slice(),
            query_fd: -1,
            query: true,
        }
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        if self.query_fd >= 0 {
            crate::sys::close_fd(self.query_fd);
        }
    }
}

impl Reader {
    /// Calls `f` on every mapping in address order until it returns false.
    pub fn for_each(&mut self, mut f: impl FnMut(Vma) -> bool) -> io::Result<()> {
        let fd = crate::sys::open_maps()?;
        let mut have = 0usize;
        let result = loop {
            let n = match crate::sys::read_fd(fd, &mut self.buf[have..]) {
                Ok(n) => n,
                Err(e) => break Err(e),
            };
            let end = have + n;
            let mut start = 0;
            let mut go = true;
            while let Some(nl) = self.buf[start..end].iter().position(|&b| b == b'\n') {
                if let Some(v) = parse_line(&self.buf[start..start + nl]) {
                    if !f(v) {
                        go = false;
                        break;
                    }
                }
                start += nl + 1;
            }
            if !go || n == 0 {
                break Ok(());
            }
            // A line longer than the buffer (a path of 64 KiB) is skipped.
            if start == 0 && end == self.buf.len() {
                have = 0;
                continue;
            }
            self.buf.copy_within(start..end, 0);
            have = end - start;
        };
        crate::sys::close_fd(fd);
        result
    }

    /// The mapping holding `addr`: asked with PROCMAP_QUERY where the kernel has it (Linux ≥ 6.11),
    /// else found by reading the file.
    pub fn find(&mut self, addr: u64) -> io::Result<Option<Vma>> {
        if self.query {
            if self.query_fd < 0 {
                self.query_fd = crate::sys::open_maps()?;
            }
            match crate::sys::query_vma(self.query_fd, addr) {
                Ok(v) => {
                    return Ok(v
                        .filter(|&(_, end, _)| end <= USER_END)
                        .map(|(start, end, prot)| Vma { start, end, prot }))
                }
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTTY) | Some(libc::EINVAL)) => {
                    self.query = false
                }
                Err(e) => return Err(e),
            }
        }
        self.scan_for(addr)
    }

    /// Calls `f` on every mapping that ends above `start`, in address order, until it returns
    /// false: with PROCMAP_QUERY one mapping at a time where the kernel has it (no text), else
    /// from the file.
    pub fn for_each_from(&mut self, start: u64, mut f: impl FnMut(Vma) -> bool) -> io::Result<()> {
        if self.query {
            if self.query_fd < 0 {
                self.query_fd = crate::sys::open_maps()?;
            }
            let mut addr = start;
            loop {
                match crate::sys::query_next_vma(self.query_fd, addr) {
                    Ok(Some((s, e, prot))) if e <= USER_END => {
                        if !f(Vma {
                            start: s,
                            end: e,
                            prot,
                        }) {
                            return Ok(());
                        }
                        addr = e;
                    }
                    Ok(_) => return Ok(()),
                    Err(e)
                        if addr == start
                            && matches!(e.raw_os_error(), Some(libc::ENOTTY) | Some(libc::EINVAL)) =>
                    {
                        self.query = false;
                        break;
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        self.for_each(|v| v.end <= start || f(v))
    }

    /// The mapping holding `addr`, found by reading the file.
    pub fn scan_for(&mut self, addr: u64) -> io::Result<Option<Vma>> {
        let mut found = None;
        self.for_each(|v| {
            if v.end <= addr {
                return true;
            }
            if v.start <= addr {
                found = Some(v);
            }
            false
        })?;
        Ok(found)
    }
}

/// The mapping holding `addr` in `vmas` (sorted, as the kernel lists them).
pub fn find(vmas: &[Vma], addr: u64) -> Option<Vma> {
    let i = vmas.partition_point(|v| v.end <= addr);
    vmas.get(i).filter(|v| v.start <= addr).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
55d0c0a00000-55d0c0a02000 r--p 00000000 08:01 123 /usr/bin/cat
55d0c0a02000-55d0c0a07000 r-xp 00002000 08:01 123 /usr/bin/cat
55d0c2000000-55d0c2021000 rw-p 00000000 00:00 0 [heap]
7f00aa000000-7f00aa001000 ---p 00000000 00:00 0
7ffd1234f000-7ffd12370000 rw-p 00000000 00:00 0 [stack]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]
";

    #[test]
    fn parses_protections_and_skips_the_kernel_half() {
        let v = parse(TEXT);
        assert_eq!(v.len(), 5);
        assert_eq!(v[0].prot, libc::PROT_READ);
        assert_eq!(v[1].prot, libc::PROT_READ | libc::PROT_EXEC);
        assert_eq!(v[2].prot, libc::PROT_READ | libc::PROT_WRITE);
        assert_eq!(v[3].prot, 0);
        assert_eq!(v[4].end, 0x7ffd_1237_0000);
    }

    #[test]
    fn finds_the_mapping_of_an_address() {
        let v = parse(TEXT);
        assert_eq!(find(&v, 0x55d0_c0a0_2010).map(|m| m.prot), Some(5));
        assert_eq!(find(&v, 0x55d0_c0a0_7000), None);
        assert_eq!(find(&v, 0), None);
        assert_eq!(find(&v, 0x7fff_0000_0000), None);
    }

    #[test]
    fn the_reader_sees_this_process_without_allocating_per_line() {
        let mut r = Reader::default();
        let local = 5u64;
        let here = r
            .find(&local as *const u64 as u64)
            .expect("maps")
            .expect("the stack is mapped");
        assert!(here.prot & libc::PROT_WRITE != 0);
        let scanned = r.scan_for(&local as *const u64 as u64).expect("maps");
        assert_eq!(scanned, Some(here), "PROCMAP_QUERY and the text agree");
        assert_eq!(r.find(8).expect("maps"), None);
        let mut n = 0;
        let mut last = 0;
        r.for_each(|v| {
            assert!(v.start >= last);
            last = v.end;
            n += 1;
            true
        })
        .expect("maps");
        assert!(n > 5);
        // PROCMAP_QUERY's walk and the text agree.
        let mut text = Vec::new();
        r.for_each(|v| {
            text.push(v);
            true
        })
        .expect("maps");
        let mut walked = Vec::new();
        r.for_each_from(0, |v| {
            walked.push(v);
            true
        })
        .expect("maps");
        // The two reads are moments apart: compare the mappings both saw below the test's heap.
        let stack = here.start;
        let t: Vec<_> = text.iter().filter(|v| v.end <= stack).collect();
        let w: Vec<_> = walked.iter().filter(|v| v.end <= stack).collect();
        assert!(!t.is_empty() && t.len() == w.len(), "{t:?} vs {w:?}");
    }
}
