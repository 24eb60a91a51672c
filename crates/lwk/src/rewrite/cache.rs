//! The sites [`find_sites`] found in a stretch of code, kept per user across runs (issue #13).
//!
//! Decoding libc's text for its `syscall`s cost ≈ 2–3 ms of every dynamically linked `lwk run`
//! here (ld.so's and the program's ≈ 1 ms more). What `find_sites` finds depends only on the bytes
//! of the code and on the function starts relative to it (decoding is position-independent: every
//! address it reports moves with the code), so the sites are stored relative to the code's start
//! in a file named after a 128-bit hash (xxh3) of the bytes, the relative starts and
//! [`SITES_VERSION`]. The next run that maps the same code — wherever it maps it — reads the file
//! instead of decoding: hashing libc's 1.4 MB costs ≈ 0.1 ms. Each site read back is checked
//! against the code it patches (the bytes it stands for: `mov $nr,%eax; syscall`, the moved
//! instructions around the `syscall`…) and a file that does not match, is short or has another
//! format is ignored and written anew.
//!
//! The directory is the user's cache directory, `$XDG_CACHE_HOME/multios/lwk-sites` (by default
//! `~/.cache/multios/lwk-sites`) — not under `$TMPDIR`, which tools and tests point at a fresh
//! directory per run (`lwk conformance` counts what a run leaves there) — made mode 0700 and
//! refused when it is a symbolic link, another user's, or writable by others
//! (`multios_host::embed::ensure_private`), or `MULTIOS_LWK_SITE_CACHE=DIR` (checked the same
//! way); `MULTIOS_LWK_SITE_CACHE=off` runs without it. The directory is decided at the run's
//! start: after the guest changed its root (chroot) or its effective user, the run decodes
//! without the cache rather than write into the guest's new root (issue #16). An entry is 16
//! bytes plus 31 a site (libc.so.6: ≈ 19 KiB). When a new entry would make more than
//! [`MAX_ENTRIES`], the oldest are removed; removing the directory is always safe.

use super::sites::{find_sites, Moved, Site, CMP_RAX_M4096, MAX_BEFORE};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Bump whenever `find_sites` may find other sites in the same code (the hash includes it, so old
/// entries are then never read).
pub const SITES_VERSION: u64 = 1;
/// The most entries kept (the oldest by modification time go first).
pub const MAX_ENTRIES: usize = 512;

const MAGIC: &[u8; 8] = b"MLWKSIT1";
const ENTRY: usize = 1 + 8 + 4 + 1 + MAX_BEFORE;

/// [`find_sites`], through the cache when there is one.
pub fn sites(code: &[u8], addr: u64, starts: &[u64]) -> Vec<Site> {
    let Some(dir) = dir() else {
        return find_sites(code, addr, starts);
    };
    let path = dir.join(format!("{:032x}", key(code, addr, starts)));
    if let Some(sites) = std::fs::read(&path).ok().and_then(|b| decode(&b, code, addr)) {
        return sites;
    }
    let sites = find_sites(code, addr, starts);
    store(&dir, &path, &encode(&sites, addr));
    sites
}

/// The cache directory as the run's start decided it, and what `/` and the effective user were
/// then (issue #16).
struct Start {
    dir: Option<PathBuf>,
    root: Option<(u64, u64)>,
    euid: u32,
}

static START: std::sync::OnceLock<Start> = std::sync::OnceLock::new();

/// Decides the cache directory from the VMM's environment, working directory, root and user at
/// the start of the run (`run.rs` calls it before loading the program; forked VMMs inherit it).
pub fn remember_start() {
    START.get_or_init(|| Start {
        dir: choose_dir(),
        root: root_id(),
        euid: crate::sys::euid(),
    });
}

/// (dev, ino) of this process's `/`: another after a chroot of the guest (the VMM's root is the
/// guest's).
fn root_id() -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/").ok().map(|m| (m.dev(), m.ino()))
}

/// The cache directory, checked private; None when it is off or unusable, or when the guest has
/// since changed its root (`chroot`: the path would name a directory inside the guest's new root,
/// which the run must not write into) or its effective user (the directory is the starting user's).
fn dir() -> Option<PathBuf> {
    remember_start();
    let s = START.get()?;
    let d = s.dir.clone()?;
    if root_id() != s.root || crate::sys::euid() != s.euid {
        return None;
    }
    multios_host::embed::ensure_private(&d).ok()?;
    Some(d)
}

/// The directory the environment names, absolute (a relative XDG_CACHE_HOME or HOME is taken
/// from the start's working directory, not the guest's later one); None when it is off.
fn choose_dir() -> Option<PathBuf> {
    let var = |name| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let d = match std::env::var_os("MULTIOS_LWK_SITE_CACHE") {
        Some(v) if v == "off" => return None,
        Some(v) => PathBuf::from(v),
        None => var("XDG_CACHE_HOME")
            .or_else(|| var("HOME").map(|h| h.join(".cache")))?
            .join("multios/lwk-sites"),
    };
    std::path::absolute(&d).ok()
}

/// The entry's name: the code's bytes, the function starts relative to it, the format.
fn key(code: &[u8], addr: u64, starts: &[u64]) -> u128 {
    use twox_hash::XxHash3_128;
    let mut h = XxHash3_128::with_seed(SITES_VERSION);
    h.write(&(code.len() as u64).to_le_bytes());
    h.write(&XxHash3_128::oneshot(code).to_le_bytes());
    for s in starts {
        h.write(&s.wrapping_sub(addr).to_le_bytes());
    }
    h.finish_128()
}

fn encode(sites: &[Site], addr: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + ENTRY * sites.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(sites.len() as u64).to_le_bytes());
    for s in sites {
        let (kind, at, value, moved) = match *s {
            Site::Mov(at, nr) => (0u8, at, nr, None),
            Site::XorCmp(at, op) => (1, at, u32::from(op), None),
            Site::After(at, m) => (2, at, 0, Some(m)),
            Site::Before(at, m) => (3, at, 0, Some(m)),
        };
        out.push(kind);
        out.extend_from_slice(&(at - addr).to_le_bytes());
        out.extend_from_slice(&value.to_le_bytes());
        let m = moved.unwrap_or(Moved {
            bytes: [0; MAX_BEFORE],
            len: 0,
        });
        out.push(m.len);
        out.extend_from_slice(&m.bytes);
    }
    out
}

/// The sites of entry `b` for `code` at `addr`; None unless every one matches the code.
fn decode(b: &[u8], code: &[u8], addr: u64) -> Option<Vec<Site>> {
    let n = usize::try_from(u64::from_le_bytes(b.get(8..16)?.try_into().ok()?)).ok()?;
    if b.get(..8)? != MAGIC || b.len() != 16 + ENTRY * n {
        return None;
    }
    let mut sites = Vec::with_capacity(n);
    for e in b[16..].chunks_exact(ENTRY) {
        let off = u64::from_le_bytes(e[1..9].try_into().ok()?);
        let value = u32::from_le_bytes(e[9..13].try_into().ok()?);
        let len = e[13];
        let moved = Moved {
            bytes: e[14..14 + MAX_BEFORE].try_into().ok()?,
            len,
        };
        let at = addr.checked_add(off)?;
        let site = match e[0] {
            0 => Site::Mov(at, value),
            1 => Site::XorCmp(at, u8::try_from(value).ok()?),
            2 => Site::After(at, moved),
            3 => Site::Before(at, moved),
            _ => return None,
        };
        if usize::from(len) > MAX_BEFORE || !matches_code(&site, code, off as usize) {
            return None;
        }
        sites.push(site);
    }
    Some(sites)
}

/// True when `code` at `o` holds what `site` stands for.
fn matches_code(site: &Site, code: &[u8], o: usize) -> bool {
    const SYSCALL: [u8; 2] = [0x0f, 0x05];
    let at = |from: usize, bytes: &[u8]| {
        from.checked_add(bytes.len())
            .and_then(|end| code.get(from..end))
            .is_some_and(|c| c == bytes)
    };
    match site {
        Site::Mov(_, nr) => {
            let mut m = vec![0xb8];
            m.extend_from_slice(&nr.to_le_bytes());
            m.extend_from_slice(&SYSCALL);
            at(o, &m)
        }
        Site::XorCmp(_, op) => at(o, &[*op, 0xc0, 0x0f, 0x05]) && at(o + 4, &CMP_RAX_M4096),
        Site::After(_, m) => at(o, &SYSCALL) && at(o + 2, m.as_slice()),
        Site::Before(_, m) => at(o, m.as_slice()) && at(o + m.as_slice().len(), &SYSCALL),
    }
}

/// Writes entry `path` (under a temporary name, then renamed: no reader sees half of it), first
/// making room when the directory is full. Failures only cost the next run the decoding.
fn store(dir: &Path, path: &Path, bytes: &[u8]) {
    prune(dir, MAX_ENTRIES.saturating_sub(1));
    let tmp = dir.join(format!(".{}-{}.tmp", std::process::id(), crate::sys::gettid()));
    let written = std::fs::File::create(&tmp).and_then(|mut f| f.write_all(bytes));
    if written.is_err() || std::fs::rename(&tmp, path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// Removes the oldest entries of `dir` until at most `keep` remain.
fn prune(dir: &Path, keep: usize) {
    let Ok(list) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<(std::time::SystemTime, PathBuf)> = list
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    if entries.len() <= keep {
        return;
    }
    entries.sort();
    for (_, p) in &entries[..entries.len() - keep] {
        let _ = std::fs::remove_file(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// libc's text and its function starts, as the loader sees them.
    fn libc_text() -> (Vec<u8>, u64, Vec<u64>) {
        super::super::tests::text_and_starts("/lib/x86_64-linux-gnu/libc.so.6").expect("libc.so.6 must exist")
    }

    #[test]
    fn an_entry_gives_back_the_same_sites_wherever_the_code_is_mapped() {
        let (code, vaddr, starts) = libc_text();
        let sites = find_sites(&code, vaddr, &starts);
        assert!(sites.len() > 300, "{} sites", sites.len());
        let entry = encode(&sites, vaddr);
        assert_eq!(decode(&entry, &code, vaddr), Some(sites.clone()));
        // The same code mapped elsewhere: the same sites, moved with it, and the same key.
        let d = 0x7000_0000u64;
        let moved: Vec<u64> = starts.iter().map(|s| s + d).collect();
        assert_eq!(key(&code, vaddr, &starts), key(&code, vaddr + d, &moved));
        assert_eq!(
            decode(&entry, &code, vaddr + d),
            Some(find_sites(&code, vaddr + d, &moved))
        );
    }

    #[test]
    fn an_entry_that_does_not_match_the_code_is_not_used() {
        let (mut code, vaddr, starts) = libc_text();
        let sites = find_sites(&code, vaddr, &starts);
        let entry = encode(&sites, vaddr);
        // Other code under the same entry (a collision, a damaged file): refused.
        let first = sites[0].span().0 - vaddr;
        code[first as usize] ^= 0xff;
        assert_eq!(decode(&entry, &code, vaddr), None);
        // A short or foreign file: refused.
        assert_eq!(decode(&entry[..entry.len() - 1], &code, vaddr), None);
        assert_eq!(decode(b"MLWKSIT0\0\0\0\0\0\0\0\0", &code, vaddr), None);
        // Different starts or other bytes make another key.
        assert_ne!(key(&code, vaddr, &starts), key(&code, vaddr, &starts[1..]));
    }

    #[test]
    fn the_cache_keeps_at_most_its_limit() {
        let dir = std::env::temp_dir().join(format!("multios-sites-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch dir");
        for k in 0..10 {
            std::fs::write(dir.join(format!("{k:032x}")), b"x").expect("entry");
        }
        prune(&dir, 4);
        assert_eq!(std::fs::read_dir(&dir).expect("dir").count(), 4);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
