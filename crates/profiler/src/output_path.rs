//! `-o prof.%r.json`: one profile per MPI rank.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// The rank from the launcher's environment: Open MPI, PMI (MPICH/Hydra), PMIx, Intel MPI.
pub fn rank_from_env() -> Option<u32> {
    ["OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "MPI_LOCALRANKID"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
}

/// Replaces `%r` by the rank (0 outside a launcher), `%p` by `pid` and `%%` by `%`, on the
/// pattern's bytes: a path that is not UTF-8 keeps its other bytes unchanged.
pub fn expand_output(pattern: &OsStr, rank: Option<u32>, pid: u32) -> OsString {
    let mut out = Vec::with_capacity(pattern.len() + 8);
    let mut bytes = pattern.as_bytes().iter().copied();
    while let Some(b) = bytes.next() {
        if b != b'%' {
            out.push(b);
            continue;
        }
        match bytes.next() {
            Some(b'r') => out.extend_from_slice(rank.unwrap_or(0).to_string().as_bytes()),
            Some(b'p') => out.extend_from_slice(pid.to_string().as_bytes()),
            Some(b'%') => out.push(b'%'),
            Some(other) => out.extend_from_slice(&[b'%', other]),
            None => out.push(b'%'),
        }
    }
    OsString::from_vec(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_rank_and_pid() {
        let e = |p: &str, r, pid| expand_output(OsStr::new(p), r, pid);
        assert_eq!(e("prof.%r.json", Some(3), 7), "prof.3.json");
        assert_eq!(e("p%p-%r-%%-%x", None, 42), "p42-0-%-%x");
        assert_eq!(e("plain.json", Some(1), 1), "plain.json");
        assert_eq!(e("%", None, 1), "%");
    }

    #[test]
    fn issue_3_expands_a_pattern_that_is_not_utf8() {
        let p = OsStr::from_bytes(b"/tmp/p\xff.%p.%r\xfe.json");
        assert_eq!(
            expand_output(p, Some(2), 9).as_bytes(),
            b"/tmp/p\xff.9.2\xfe.json"
        );
    }
}
