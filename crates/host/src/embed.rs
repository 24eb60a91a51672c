//! Files built by a build script and embedded in a binary (preload libraries, C benchmarks, the
//! LWK's override object), written out once per content on first use.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

/// Why an embedded file could not be written.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {source}")]
pub struct EmbedError {
    pub what: String,
    pub source: std::io::Error,
}

/// Writes `bytes` to `$TMPDIR/multios-UID/STEM-HASH.EXT` (if not there yet) with `mode`; returns the
/// path. The name carries a hash of the content, so runs share one copy and a new build gets a new
/// file; the file is written under a temporary name and renamed, so no reader sees it half written.
pub fn materialize(stem: &str, ext: &str, bytes: &[u8], mode: u32) -> Result<PathBuf, EmbedError> {
    let io = |what: String| move |source| EmbedError { what, source };
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    });
    let dir = private_dir()?;
    let path = dir.join(format!("{stem}-{hash:016x}{ext}"));
    if !path.exists() {
        let tmp = dir.join(format!("{stem}-{hash:016x}.{}.tmp", std::process::id()));
        std::fs::write(&tmp, bytes).map_err(io(format!("writing {}", tmp.display())))?;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))
            .map_err(io(format!("chmod {}", tmp.display())))?;
        std::fs::rename(&tmp, &path).map_err(io(format!("renaming to {}", path.display())))?;
    }
    Ok(path)
}

/// `$TMPDIR/multios-UID`, created mode 0700 if missing, and checked before anything is written or
/// run from it: a directory (not a symbolic link) owned by this user that no one else can write.
/// Without the check another user could create the directory first (it is in a world-writable
/// place) and replace the preload library between its writing and the program's start.
pub fn private_dir() -> Result<PathBuf, EmbedError> {
    let dir = temp_base().join(format!("multios-{}", crate::sys::uid()));
    ensure_private(&dir)?;
    Ok(dir)
}

/// `$TMPDIR`, absolute: unset or empty is /tmp, a relative one is taken from the current
/// directory (the paths made in it go into LD_PRELOAD and the like, read by programs that may run
/// elsewhere).
pub fn temp_base() -> PathBuf {
    let tmp = match std::env::var_os("TMPDIR") {
        Some(t) if !t.is_empty() => PathBuf::from(t),
        _ => PathBuf::from("/tmp"),
    };
    if tmp.is_absolute() {
        tmp
    } else {
        std::path::absolute(&tmp).unwrap_or(tmp)
    }
}

/// Creates `dir` (mode 0700, parents as needed) if missing and checks that it is a directory owned
/// by this user, not writable by group or others.
pub fn ensure_private(dir: &std::path::Path) -> Result<(), EmbedError> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let what = || format!("the private directory {}", dir.display());
    match std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) => {
            return Err(EmbedError {
                what: format!("creating {}", what()),
                source: e,
            })
        }
    }
    let md = std::fs::symlink_metadata(dir).map_err(|source| EmbedError { what: what(), source })?;
    let unsafe_dir = |why: &str| EmbedError {
        what: what(),
        source: std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("{why}; remove it or point TMPDIR elsewhere"),
        ),
    };
    if !md.file_type().is_dir() {
        return Err(unsafe_dir("is not a directory (a symbolic link?)"));
    }
    if md.uid() != crate::sys::uid() {
        return Err(unsafe_dir(&format!(
            "belongs to uid {}, not to this user ({})",
            md.uid(),
            crate::sys::uid()
        )));
    }
    if md.mode() & 0o022 != 0 {
        return Err(unsafe_dir(&format!(
            "is writable by group or others (mode {:o})",
            md.mode() & 0o7777
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_private_dir_that_others_can_write_is_refused() {
        let base = std::env::temp_dir().join(format!("multios-embed-test-{}", std::process::id()));
        let dir = base.join("p");
        ensure_private(&dir).expect("created");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let e = ensure_private(&dir).expect_err("group/other-writable");
        assert!(e.to_string().contains("writable by group or others"), "{e}");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        ensure_private(&dir).expect("private again");
        let link = base.join("l");
        std::os::unix::fs::symlink(&dir, &link).expect("symlink");
        let e = ensure_private(&link).expect_err("a symlink");
        assert!(e.to_string().contains("not a directory"), "{e}");
        std::fs::remove_dir_all(&base).expect("cleanup");
    }
}
