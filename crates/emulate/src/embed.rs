//! Files built by build.rs and embedded in the binary: written out by `multios_host::embed`.

use crate::EmulateError;
use std::path::PathBuf;

/// Writes `bytes` to `$TMPDIR/multios-UID/STEM-HASH.EXT` once (see `multios_host::embed`).
pub fn materialize(stem: &str, ext: &str, bytes: &[u8], mode: u32) -> Result<PathBuf, EmulateError> {
    multios_host::embed::materialize(stem, ext, bytes, mode).map_err(|e| EmulateError::Io {
        what: e.what,
        cause: e.source,
    })
}
