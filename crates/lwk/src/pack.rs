//! Fat binaries (`multios lwk pack PROG -o OUT`, issue #13; Multiverse §III-E, the HRT as a
//! compilation target): one executable that, run as an ordinary program, starts the program it
//! carries in the LWK with the settings it was packed with.
//!
//! Layout: a copy of the multios executable, then the payload and a fixed trailer, so the ELF loader
//! of Linux runs multios and multios finds its payload at the end of its own file:
//!
//! ```text
//!  +----------------------+ 0
//!  | the multios binary   |
//!  +----------------------+ base
//!  | the program's bytes  | prog_len
//!  +----------------------+
//!  | settings (JSON)      | meta_len
//!  +----------------------+
//!  | prog_len  (u64 LE)   |
//!  | meta_len  (u64 LE)   |
//!  | MAGIC     (16 bytes) |
//!  +----------------------+ end
//! ```

use serde::{Deserialize, Serialize};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The last 16 bytes of a packed executable.
pub const MAGIC: &[u8; 16] = b"MULTIOS-LWKPACK1";
const TRAILER: u64 = 32;

/// Errors packing or unpacking.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{}: the packed payload is damaged ({reason}); pack the program again", path.display())]
    Damaged { path: PathBuf, reason: String },
    #[error("{}: {reason}", path.display())]
    Refused { path: PathBuf, reason: String },
}

/// What a packed executable runs and how.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Settings {
    /// The program's file name when it was packed (shown in messages).
    pub name: String,
    /// `multios lwk run` options the run starts with (e.g. `--policy mos`, `--cpus 1`).
    pub flags: Vec<String>,
    /// The overrides file's text, when packed with `--overrides`.
    pub overrides: Option<String>,
}

/// Writes `out`: `runner` (the multios executable), then `program`'s bytes and `settings`.
pub fn write(runner: &Path, program: &Path, settings: &Settings, out: &Path) -> Result<(), PackError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| PackError::Io { path, source }
    };
    let refused = |path: &Path, reason: &str| PackError::Refused {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    };
    // The output first: a directory (or a missing one) would only show at the final rename,
    // after the whole file (the runner: ≈ 125 MB) was written beside it.
    if out.is_dir() {
        return Err(refused(
            out,
            "is a directory: -o takes the packed executable's file name",
        ));
    }
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(refused(out, "the directory to write it in does not exist"));
    }
    let base = std::fs::read(runner).map_err(io(runner))?;
    if payload_bounds(&base).is_some() {
        return Err(refused(
            runner,
            "the runner is itself a packed executable: pack with the multios binary",
        ));
    }
    let prog = std::fs::read(program).map_err(io(program))?;
    if payload_bounds(&prog).is_some() {
        return Err(refused(
            program,
            "is already a packed executable (made by `lwk pack`): pack the original program",
        ));
    }
    let meta = serde_json::to_vec(settings).map_err(|e| PackError::Damaged {
        path: out.to_path_buf(),
        reason: e.to_string(),
    })?;
    let mut name = out.as_os_str().to_os_string();
    name.push(format!(".pack-tmp.{}", std::process::id()));
    let tmp = PathBuf::from(name);
    let r = write_to(&tmp, out, [&base[..], &prog, &meta], prog.len(), meta.len());
    if r.is_err() {
        // Whatever failed, no partial file (the runner's size) is left behind.
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

/// Writes the parts and the trailer to `tmp` and renames it to `out`.
fn write_to(tmp: &Path, out: &Path, parts: [&[u8]; 3], prog: usize, meta: usize) -> Result<(), PackError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| PackError::Io { path, source }
    };
    let mut f = std::fs::File::create(tmp).map_err(io(tmp))?;
    for part in parts {
        f.write_all(part).map_err(io(tmp))?;
    }
    f.write_all(&(prog as u64).to_le_bytes()).map_err(io(tmp))?;
    f.write_all(&(meta as u64).to_le_bytes()).map_err(io(tmp))?;
    f.write_all(MAGIC).map_err(io(tmp))?;
    f.sync_all().map_err(io(tmp))?;
    drop(f);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(tmp, std::fs::Permissions::from_mode(0o755)).map_err(io(tmp))?;
    std::fs::rename(tmp, out).map_err(io(out))
}

/// (program offset, program length, settings length) of a packed file's bytes, from its trailer.
fn payload_bounds(bytes: &[u8]) -> Option<(u64, u64, u64)> {
    let n = bytes.len() as u64;
    if n < TRAILER || &bytes[(n - 16) as usize..] != MAGIC {
        return None;
    }
    let word = |at: u64| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[at as usize..at as usize + 8]);
        u64::from_le_bytes(b)
    };
    let (p, m) = (word(n - TRAILER), word(n - TRAILER + 8));
    let start = n.checked_sub(TRAILER)?.checked_sub(m)?.checked_sub(p)?;
    Some((start, p, m))
}

/// The payload of `exe` (normally /proc/self/exe): None when it is not a packed executable.
pub fn read(exe: &Path) -> Result<Option<(Vec<u8>, Settings)>, PackError> {
    let io = |source| PackError::Io {
        path: exe.to_path_buf(),
        source,
    };
    let damaged = |reason: String| PackError::Damaged {
        path: exe.to_path_buf(),
        reason,
    };
    let mut f = std::fs::File::open(exe).map_err(io)?;
    let n = f.seek(SeekFrom::End(0)).map_err(io)?;
    if n < TRAILER {
        return Ok(None);
    }
    let mut t = [0u8; TRAILER as usize];
    f.seek(SeekFrom::Start(n - TRAILER)).map_err(io)?;
    f.read_exact(&mut t).map_err(io)?;
    if &t[16..] != MAGIC {
        return Ok(None);
    }
    let word = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&t[i..i + 8]);
        u64::from_le_bytes(b)
    };
    let (p, m) = (word(0), word(8));
    let start = (n - TRAILER)
        .checked_sub(m)
        .and_then(|x| x.checked_sub(p))
        .ok_or_else(|| damaged(format!("lengths {p} + {m} exceed the file")))?;
    let mut prog = vec![0u8; p as usize];
    let mut meta = vec![0u8; m as usize];
    f.seek(SeekFrom::Start(start)).map_err(io)?;
    f.read_exact(&mut prog).map_err(io)?;
    f.read_exact(&mut meta).map_err(io)?;
    let settings = serde_json::from_slice(&meta).map_err(|e| damaged(e.to_string()))?;
    Ok(Some((prog, settings)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packed_file_gives_back_its_program_and_settings() {
        let dir = std::env::temp_dir().join(format!("multios-pack-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let (runner, prog, out) = (dir.join("runner"), dir.join("prog"), dir.join("prog.lwk"));
        std::fs::write(&runner, b"\x7fELF runner bytes").expect("runner");
        std::fs::write(&prog, b"\x7fELF program bytes").expect("prog");
        let s = Settings {
            name: "prog".into(),
            flags: vec!["--policy".into(), "mos".into()],
            overrides: Some("overrides: []\n".into()),
        };
        write(&runner, &prog, &s, &out).expect("pack");
        let (bytes, back) = read(&out).expect("read").expect("packed");
        assert_eq!(bytes, b"\x7fELF program bytes");
        assert_eq!(back, s);
        assert!(
            read(&runner).expect("read").is_none(),
            "an ordinary file is not packed"
        );
        let e = write(&out, &prog, &s, &dir.join("twice")).expect_err("packing a packed runner");
        assert!(e.to_string().contains("itself a packed"), "{e}");
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
}
