//! Executable private file mappings — a library's or a program's text mapped by ld.so — made by
//! the host and rewritten in place (issue #15).
//!
//! They were copies: the range was filled with `pread`, so every page of the text was allocated
//! and copied before the guest ran any of it (an Open MPI singleton's ≈ 110 libraries and
//! components in the program and as many again in `orted`: tens of megabytes a start, most of
//! which the program never executes). Now the VMM maps the file MAP_PRIVATE over the range, as it
//! does for non-executable private file mappings (`shared.rs`), and the syscall sites are
//! rewritten in the mapping: a rewritten page becomes the VMM's own copy (the host's
//! copy-on-write), every other page stays the page cache's, shared with every other process
//! that maps the file, and is faulted in only when the guest touches it. What the guest sees is
//! the same bytes. As with Linux's own mapping, later writes to the file show through pages the
//! guest has not written (before, the copy kept the old bytes).
//!
//! A range that reaches past the file's last page (the guest would fault there: SIGBUS on Linux,
//! an EFAULT from KVM_RUN here) and a file the host cannot map are still copied (`local.rs`).
//! `MULTIOS_LWK_CODE=copy` forces the copy, for measurements.

use crate::kernel::{lock, Kernel};
use crate::mm::PAGE;
use crate::sys;

impl Kernel {
    /// Maps the executable range `[addr, addr+len)` of `fd` at `off` (a range the memory manager
    /// just gave out) with the host's copy-on-write mapping and rewrites its syscall sites. False
    /// when it cannot (the caller copies the file instead).
    pub(super) fn map_code(&self, addr: u64, len: u64, fd: i32, off: u64) -> bool {
        if std::env::var_os("MULTIOS_LWK_CODE").is_some_and(|v| v == "copy") {
            return false;
        }
        let Ok(file) = sys::MappedFile::of_fd(fd) else {
            return false;
        };
        let size = file.bytes().len() as u64;
        let pages = len.div_ceil(PAGE) * PAGE;
        if off >= size || off.saturating_add(pages) > size.div_ceil(PAGE) * PAGE {
            return false;
        }
        if self.map_private_file(addr, len, fd, off).is_err() {
            return false;
        }
        // The bytes the file holds (the rest of the last page reads as zero, as in a copy).
        let code = len.min(size - off);
        if let Some(t) = lock(&self.program.thunks).as_mut() {
            // Decoding starts at the library's function starts (`loader/ehframe.rs`).
            let starts = crate::loader::ehframe::starts_in_mapping(file.bytes(), off, addr, code);
            let n = crate::rewrite::rewrite_from(&self.mem, t, addr, code, &starts);
            self.program
                .rewritten
                .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        }
        true
    }
}
