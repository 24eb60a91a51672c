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

/// Reads and parses /proc/self/maps.
pub fn read() -> io::Result<Vec<Vma>> {
    Ok(parse(&std::fs::read_to_string("/proc/self/maps")?))
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
}
