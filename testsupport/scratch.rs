//! A test's scratch directory, removed with everything in it when the guard is dropped — at the end of
//! the test and when it panics — so the suite leaves nothing in the temporary directory.
//!
//! Test files include it with `#[path = "…/testsupport/scratch.rs"] mod scratch;` (the workspace has no
//! test-support crate; this keeps one copy).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// A directory under the temporary directory, named `<prefix>-<pid>-<name>`, created empty.
#[derive(Debug)]
pub struct Scratch(PathBuf);

impl Scratch {
    pub fn new(prefix: &str, name: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("{prefix}-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("cannot create {}: {e}", d.display()));
        Scratch(d)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

thread_local! {
    /// The directories of [`until_test_ends`], removed when the thread that asked for them exits: libtest
    /// runs every test on its own thread, so that is when the test (passed or panicked) is over.
    static HELD: std::cell::RefCell<Vec<Scratch>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A fresh directory `<prefix>-<pid>-<k>-<name>` (k unique in the process) for helpers that hand out a
/// plain path, e.g. of a program they built in it: it stays until the calling test ends, then is removed.
pub fn until_test_ends(prefix: &str, name: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let k = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let s = Scratch::new(prefix, &format!("{k}-{name}"));
    let path = s.0.clone();
    HELD.with(|h| h.borrow_mut().push(s));
    path
}
