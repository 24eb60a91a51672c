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
    let dir = std::env::temp_dir().join(format!("multios-{}", crate::sys::uid()));
    std::fs::create_dir_all(&dir).map_err(io(format!("creating {}", dir.display())))?;
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
