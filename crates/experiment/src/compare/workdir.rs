//! The fresh copy of a working directory every run of a comparison gets (issue #15): directories,
//! regular files with their permissions, symbolic links as links and FIFOs made anew (a FIFO's
//! content is whatever its writer sends, not something to copy). Sockets and device nodes are
//! refused with their path: copying a device reads the device (`/dev/zero` without end), and a
//! socket belongs to the process listening on it. The scratch directory holding the copy is skipped
//! when it lies inside the directory copied (`TMPDIR` under `--workdir`), which otherwise copied
//! itself into itself until the path was too long.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// What can go wrong copying a working directory.
#[derive(Debug, thiserror::Error)]
pub enum WorkdirError {
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    #[error("--workdir {0}: not a directory; give the directory each run gets a fresh copy of")]
    NotDir(String),
    #[error(
        "{path} is a {kind}, which a run's fresh copy of its working directory cannot hold ({why}); \
         move it out of the directory the runs copy"
    )]
    Special {
        path: String,
        kind: &'static str,
        why: &'static str,
    },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> WorkdirError {
    let what = what.into();
    move |source| WorkdirError::Io { what, source }
}

/// Copies `src` into `dst` (which must not exist): directories, files with their permissions,
/// symbolic links as links, FIFOs as new FIFOs; sockets and devices are refused.
pub fn copy_tree(src: &Path, dst: &Path) -> Result<(), WorkdirError> {
    copy_skipping(src, dst, None)
}

/// [`copy_tree`] leaving out `skip` (a path below `src`, spelled from `src`).
fn copy_skipping(src: &Path, dst: &Path, skip: Option<&Path>) -> Result<(), WorkdirError> {
    let meta = std::fs::symlink_metadata(src).map_err(io(format!("reading {}", src.display())))?;
    let ft = meta.file_type();
    let special = |kind, why| WorkdirError::Special {
        path: src.display().to_string(),
        kind,
        why,
    };
    if ft.is_symlink() {
        let target = std::fs::read_link(src).map_err(io(format!("reading link {}", src.display())))?;
        std::os::unix::fs::symlink(target, dst).map_err(io(format!("creating link {}", dst.display())))?;
    } else if ft.is_dir() {
        std::fs::create_dir(dst).map_err(io(format!("creating {}", dst.display())))?;
        let entries = std::fs::read_dir(src).map_err(io(format!("listing {}", src.display())))?;
        for e in entries {
            let e = e.map_err(io(format!("listing {}", src.display())))?;
            if skip.is_some_and(|s| s == e.path()) {
                continue;
            }
            copy_skipping(&e.path(), &dst.join(e.file_name()), skip)?;
        }
        std::fs::set_permissions(dst, meta.permissions()).map_err(io(format!("chmod {}", dst.display())))?;
    } else if ft.is_fifo() {
        // Opening a FIFO to copy it waits for a writer, for ever: a new one, with the same mode.
        let mode = nix::sys::stat::Mode::from_bits_truncate(meta.permissions().mode() & 0o7777);
        nix::unistd::mkfifo(dst, mode)
            .map_err(|e| io(format!("creating the FIFO {}", dst.display()))(e.into()))?;
        std::fs::set_permissions(dst, meta.permissions()).map_err(io(format!("chmod {}", dst.display())))?;
    } else if ft.is_socket() {
        return Err(special(
            "socket",
            "it belongs to the process listening on it; a run makes its own",
        ));
    } else if ft.is_char_device() || ft.is_block_device() {
        let kind = if ft.is_char_device() {
            "character device"
        } else {
            "block device"
        };
        return Err(special(
            kind,
            "copying it reads the device itself, /dev/zero without end",
        ));
    } else {
        std::fs::copy(src, dst).map_err(io(format!("copying {} to {}", src.display(), dst.display())))?;
    }
    Ok(())
}

/// A fresh copy of `workdir` under `scratch`, at the same path for every run (a program that prints
/// its directory prints the same thing each time). `scratch`, when inside `workdir`, is left out.
pub fn fresh_copy(workdir: &Path, scratch: &Path) -> Result<PathBuf, WorkdirError> {
    if !workdir.is_dir() {
        return Err(WorkdirError::NotDir(workdir.display().to_string()));
    }
    let dst = scratch.join("work");
    if dst.exists() {
        std::fs::remove_dir_all(&dst).map_err(io(format!("removing {}", dst.display())))?;
    }
    // Both resolved, so that `td` and `$PWD/td/multios-compare-…` are seen to nest; the copy then
    // walks the resolved path (links are not followed, so its entries stay comparable).
    let root = std::fs::canonicalize(workdir).map_err(io(format!("--workdir {}", workdir.display())))?;
    let skip = std::fs::canonicalize(scratch)
        .ok()
        .filter(|s| s.starts_with(&root) && s != &root);
    copy_skipping(&root, &dst, skip.as_deref())?;
    Ok(dst)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::capture::Scratch;

    #[test]
    fn issue_15_workdir_copies_are_fresh() {
        let s = Scratch::new().expect("scratch");
        let src = s.0.join("src");
        std::fs::create_dir_all(src.join("sub")).expect("mkdir");
        std::fs::write(src.join("sub/f"), b"x").expect("write");
        std::os::unix::fs::symlink("sub/f", src.join("l")).expect("symlink");
        let w = fresh_copy(&src, &s.0).expect("copy");
        assert_eq!(std::fs::read(w.join("l")).ok().as_deref(), Some(&b"x"[..]));
        std::fs::write(w.join("new"), b"y").expect("write");
        let w = fresh_copy(&src, &s.0).expect("copy again");
        assert!(!w.join("new").exists());
        assert!(fresh_copy(&src.join("sub/f"), &s.0).is_err());
    }

    /// A FIFO is made anew with its mode (copying one waited for a writer for ever); a socket is
    /// refused with its path.
    #[test]
    fn issue_15_workdir_fifos_are_made_and_sockets_refused() {
        let s = Scratch::new().expect("scratch");
        let src = s.0.join("src");
        std::fs::create_dir_all(&src).expect("mkdir");
        nix::unistd::mkfifo(&src.join("fifo"), nix::sys::stat::Mode::from_bits_truncate(0o640))
            .expect("mkfifo");
        std::fs::set_permissions(src.join("fifo"), std::fs::Permissions::from_mode(0o640)).expect("chmod");
        let w = fresh_copy(&src, &s.0).expect("copy");
        let m = std::fs::symlink_metadata(w.join("fifo")).expect("the copy has the FIFO");
        assert!(m.file_type().is_fifo());
        assert_eq!(m.permissions().mode() & 0o7777, 0o640);
        let _sock = std::os::unix::net::UnixListener::bind(src.join("sock")).expect("bind");
        let e = fresh_copy(&src, &s.0).expect_err("a socket").to_string();
        assert!(e.contains("sock is a socket") && e.contains("move it out"), "{e}");
    }
}
