//! The physical-frame layer: a process's resident pages (/proc/PID/statm) and the page-frame numbers
//! of the present pages of its writable mappings (/proc/PID/maps + /proc/PID/pagemap; PFNs need
//! CAP_SYS_ADMIN, otherwise they read as 0 and no sharing is seen). Read-only mappings (program
//! text, shared libraries) are left out: every process shares libc, which says nothing about how
//! processes interact.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::FileExt;

/// At most this many pages are read per process and sample.
pub const MAX_PAGES: u64 = 1 << 20;

/// (resident pages, PFNs of present pages in writable mappings), or None when the process is gone.
pub fn sample(pid: u32) -> Option<(u64, BTreeSet<u64>)> {
    let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
    let rss: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    let pagemap = std::fs::File::open(format!("/proc/{pid}/pagemap")).ok()?;
    let page = crate::sys::page_size();
    let mut pfns = BTreeSet::new();
    let mut budget = MAX_PAGES;
    for line in maps.lines() {
        let mut it = line.split_whitespace();
        let (Some(range), Some(perms)) = (it.next(), it.next()) else {
            continue;
        };
        if !perms.contains('w') {
            continue;
        }
        let Some((a, b)) = range.split_once('-') else {
            continue;
        };
        let (Ok(a), Ok(b)) = (u64::from_str_radix(a, 16), u64::from_str_radix(b, 16)) else {
            continue;
        };
        let n = ((b - a) / page).min(budget);
        budget -= n;
        let mut buf = vec![0u8; (n * 8) as usize];
        if pagemap.read_exact_at(&mut buf, a / page * 8).is_err() {
            continue;
        }
        for c in buf.chunks_exact(8) {
            let e = u64::from_ne_bytes(c.try_into().unwrap_or([0; 8]));
            let pfn = e & ((1 << 55) - 1);
            if e >> 63 == 1 && pfn != 0 {
                pfns.insert(pfn);
            }
        }
        if budget == 0 {
            break;
        }
    }
    Some((rss, pfns))
}

/// The frames each pair of processes sampled in one round both map, kept in `most` when more than
/// that pair's earlier rounds (pairs `(a, b)` with a < b). Frames are compared within one round
/// only: a frame freed by one process and reused by another later is not sharing.
pub fn share_round(round: &[(u32, &BTreeSet<u64>)], most: &mut BTreeMap<(u32, u32), u64>) {
    for (i, &(a, pa)) in round.iter().enumerate() {
        for &(b, pb) in &round[i + 1..] {
            let n = pa.intersection(pb).count() as u64;
            if n > 0 {
                let e = most.entry((a.min(b), a.max(b))).or_insert(0);
                *e = (*e).max(n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::share_round;
    use std::collections::{BTreeMap, BTreeSet};

    #[test]
    fn a_pair_keeps_its_most_shared_round() {
        let set = |v: &[u64]| v.iter().copied().collect::<BTreeSet<u64>>();
        let (a, b, c) = (set(&[1, 2, 3, 4]), set(&[3, 4, 5]), set(&[9]));
        let mut most = BTreeMap::new();
        share_round(&[(7, &a), (5, &b), (6, &c)], &mut most);
        assert_eq!(most, BTreeMap::from([((5, 7), 2)]));
        // a later round where they share less (one unmapped) keeps the earlier count
        let b2 = set(&[4]);
        share_round(&[(5, &b2), (7, &a)], &mut most);
        assert_eq!(most[&(5, 7)], 2);
    }

    #[test]
    fn samples_this_process() {
        let (rss, pfns) = super::sample(std::process::id()).expect("own process");
        assert!(rss > 0);
        // root reads real PFNs; the tests run as root here
        assert!(
            !pfns.is_empty(),
            "no PFNs: /proc/self/pagemap needs CAP_SYS_ADMIN"
        );
    }
}
