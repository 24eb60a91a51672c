//! The images the traced processes exec'd, read back from their files (issue #15): the eBPF
//! backend records the file each exec ran (`sched_process_exec`: its name as the exec gave it, its
//! inode and size); here each is opened again, checked to be the same file (inode and size), and
//! its ELF program headers give the sizes the LWK's start-up grows with — the loaded (PT_LOAD
//! file) bytes and the executable ones, of the program and of its PT_INTERP.

use crate::raw::RawExec;
use goblin::elf::program_header::{ProgramHeader, PF_X, PT_INTERP, PT_LOAD};
use goblin::elf::Elf;
use multios_profile::{ExecImage, ImageFile, ImageSizes};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Why an exec'd file's sizes are unknown.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("'{path}' is relative and the directory it was exec'd from is not known")]
    Relative { path: String },
    #[error("cannot read '{}': {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("'{}' is not the file that was exec'd (inode {now}, size {now_size}; exec'd: inode {then}, size {then_size}): it was replaced after the run", path.display())]
    Replaced {
        path: PathBuf,
        then: u64,
        then_size: u64,
        now: u64,
        now_size: u64,
    },
    #[error("'{}' is not an ELF file: {reason}", path.display())]
    NotElf { path: PathBuf, reason: String },
}

/// The most of a file's start read for its headers (the program headers follow the ELF header).
const HEAD: u64 = 64 << 10;

/// A file's sizes and its PT_INTERP, from its program headers.
pub fn elf_sizes(path: &Path) -> Result<(ImageSizes, Option<String>), ImageError> {
    let read = |source| ImageError::Read {
        path: path.to_path_buf(),
        source,
    };
    let not_elf = |reason: String| ImageError::NotElf {
        path: path.to_path_buf(),
        reason,
    };
    let f = std::fs::File::open(path).map_err(read)?;
    let len = f.metadata().map_err(read)?.len();
    let mut head = vec![0u8; HEAD.min(len) as usize];
    f.read_exact_at(&mut head, 0).map_err(read)?;
    let h = Elf::parse_header(&head).map_err(|e| not_elf(e.to_string()))?;
    let ctx = goblin::container::Ctx::new(
        h.container().map_err(|e| not_elf(e.to_string()))?,
        h.endianness().map_err(|e| not_elf(e.to_string()))?,
    );
    let end = h.e_phoff + u64::from(h.e_phnum) * u64::from(h.e_phentsize);
    if end > head.len() as u64 {
        head = vec![0u8; end.min(len) as usize];
        f.read_exact_at(&mut head, 0).map_err(read)?;
    }
    let phs = ProgramHeader::parse(&head, h.e_phoff as usize, h.e_phnum as usize, ctx)
        .map_err(|e| not_elf(format!("program headers: {e}")))?;
    let mut s = ImageSizes::default();
    let mut interp = None;
    for p in &phs {
        if p.p_type == PT_LOAD {
            s.loaded_bytes += p.p_filesz;
            s.memory_bytes += p.p_memsz;
            if p.p_flags & PF_X != 0 {
                s.exec_bytes += p.p_filesz;
            }
        } else if p.p_type == PT_INTERP && p.p_filesz > 0 && p.p_filesz < 4096 {
            let mut b = vec![0u8; p.p_filesz as usize];
            f.read_exact_at(&mut b, p.p_offset).map_err(read)?;
            let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
            interp = Some(String::from_utf8_lossy(&b[..n]).into_owned());
        }
    }
    Ok((s, interp))
}

/// `path` as exec'd from `cwd` (absolute paths as they are).
fn resolve(path: &str, cwd: Option<&Path>) -> Result<PathBuf, ImageError> {
    let p = Path::new(path);
    if p.is_absolute() {
        return Ok(p.to_path_buf());
    }
    cwd.map(|d| d.join(p)).ok_or_else(|| ImageError::Relative {
        path: path.to_string(),
    })
}

/// The sizes of the file exec'd as `e`, when it is still that file (same inode and size).
fn exec_sizes(e: &RawExec, cwd: Option<&Path>) -> Result<(ImageSizes, Option<String>), ImageError> {
    let path = resolve(&e.path, cwd)?;
    let m = std::fs::metadata(&path).map_err(|source| ImageError::Read {
        path: path.clone(),
        source,
    })?;
    if e.ino != 0 && (m.ino() != e.ino || m.size() != e.size) {
        return Err(ImageError::Replaced {
            path,
            then: e.ino,
            then_size: e.size,
            now: m.ino(),
            now_size: m.size(),
        });
    }
    elf_sizes(&path)
}

fn file(path: String, sizes: Result<ImageSizes, ImageError>) -> ImageFile {
    match sizes {
        Ok(s) => ImageFile {
            path,
            sizes: Some(s),
            unknown: None,
        },
        Err(e) => ImageFile {
            path,
            sizes: None,
            unknown: Some(e.to_string()),
        },
    }
}

/// One exec as the profile records it: the file, its interpreter, their sizes (or why not),
/// `at_s` from `origin` (ns, the threads' clock). A relative name is taken from `cwd` (the
/// directory the traced program was started in), and is unknown when the file there is another.
pub fn exec_image(e: &RawExec, origin: u64, cwd: Option<&Path>) -> ExecImage {
    let at_s = e.ns.saturating_sub(origin) as f64 / 1e9;
    match exec_sizes(e, cwd) {
        Ok((s, interp)) => ExecImage {
            at_s,
            image: file(e.path.clone(), Ok(s)),
            interp: interp.map(|i| {
                let sizes = elf_sizes(Path::new(&i)).map(|(s, _)| s);
                file(i, sizes)
            }),
        },
        Err(err) => ExecImage {
            at_s,
            image: file(e.path.clone(), Err(err)),
            interp: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This test's own executable: an ELF with loaded and executable bytes, and (dynamically
    /// linked, as Rust test binaries are here) an interpreter.
    #[test]
    fn issue_15_a_real_elf_s_sizes_and_interpreter_come_from_its_program_headers() {
        let me = std::env::current_exe().expect("own path");
        let (s, interp) = elf_sizes(&me).expect("own ELF");
        let len = std::fs::metadata(&me).map(|m| m.len()).unwrap_or(0);
        assert!(s.exec_bytes > 0 && s.exec_bytes < s.loaded_bytes, "{s:?}");
        assert!(
            s.loaded_bytes <= len && s.memory_bytes >= s.loaded_bytes,
            "{s:?} of {len}"
        );
        let interp = interp.expect("a dynamic test binary names its ld.so");
        let (ld, none) = elf_sizes(Path::new(&interp)).expect("ld.so reads");
        assert!(ld.exec_bytes > 0 && none.is_none(), "{ld:?} {none:?}");
        let e = elf_sizes(Path::new("/proc/self/status")).expect_err("not ELF");
        assert!(e.to_string().contains("not an ELF file"), "{e}");
    }

    #[test]
    fn issue_15_an_exec_is_read_back_only_from_the_same_file() {
        let me = std::env::current_exe().expect("own path");
        let m = std::fs::metadata(&me).expect("stat");
        let raw = RawExec {
            tgid: 1,
            ns: 3_000_000_000,
            path: me.display().to_string(),
            ino: m.ino(),
            size: m.size(),
        };
        let e = exec_image(&raw, 1_000_000_000, None);
        assert!((e.at_s - 2.0).abs() < 1e-12);
        assert!(e.image.sizes.is_some() && e.interp.is_some(), "{e:?}");
        assert!(e.total().is_some(), "{e:?}");
        // Another inode: replaced after the run.
        let e = exec_image(
            &RawExec {
                ino: m.ino() + 1,
                ..raw.clone()
            },
            0,
            None,
        );
        let why = e.image.unknown.unwrap_or_default();
        assert!(e.image.sizes.is_none() && why.contains("replaced"), "{why}");
        // Relative: from the directory it was started in, else unknown.
        let name = me
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let rel = RawExec { path: name, ..raw };
        assert!(exec_image(&rel, 0, me.parent()).image.sizes.is_some());
        let why = exec_image(&rel, 0, None).image.unknown.unwrap_or_default();
        assert!(why.contains("relative"), "{why}");
    }
}
