//! The recorder: one run's trace file, written under one lock by the threads that serve calls.

use super::format::{Event, Header, TraceError, FORMAT, VERSION};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

/// Writes one run's trace.
pub struct Tracer {
    path: PathBuf,
    /// The directory of `path`, opened at the start (O_PATH, in the VMM's fd range): a forked
    /// child's `FILE.PID` is made there even when the guest changed its root since (issue #16).
    dir: Option<std::os::fd::OwnedFd>,
    out: Mutex<Option<BufWriter<File>>>,
    t0: Instant,
}

impl std::fmt::Debug for Tracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracer").field("path", &self.path).finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Tracer {
    /// Creates `path` and writes the header for `program`. The path is kept absolute: a forked
    /// child's `FILE.PID` goes beside it even when the guest changed directory meanwhile (the
    /// VMM's working directory is the guest's).
    pub fn create(path: &Path, program: &str) -> Result<Tracer, TraceError> {
        let path = &std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let dir = path.parent().and_then(Path::to_str).and_then(|d| {
            let fd = crate::sys::create_high(crate::fds::floor(), || {
                crate::sys::open_at(libc::AT_FDCWD, d, libc::O_PATH | libc::O_DIRECTORY)
            });
            // SAFETY: create_high just made `fd`; nothing else owns it.
            fd.ok()
                .map(|fd| unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) })
        });
        let t = Tracer {
            path: path.to_path_buf(),
            dir,
            out: Mutex::new(None),
            t0: Instant::now(),
        };
        t.open(path, program, None)?;
        Ok(t)
    }

    /// Creates `path` (in [`Tracer::dir`] when there is one) in the VMM's fd range, above the
    /// guest's (whose fds are the VMM's own: a low fd would be the guest's to close or reuse).
    fn create_file(&self, path: &Path) -> std::io::Result<File> {
        let (Some(dir), Some(name)) = (&self.dir, path.file_name().and_then(|n| n.to_str())) else {
            let low_fds = crate::sys::low_fds();
            let low = File::create(path)?;
            let file = File::from(crate::sys::dup_high(low.as_raw_fd(), crate::fds::floor())?);
            drop(low_fds);
            return Ok(file);
        };
        let name =
            std::ffi::CString::new(name).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC | libc::O_CLOEXEC;
        let fd = crate::sys::create_high(crate::fds::floor(), || {
            match crate::sys::openat_raw(dir.as_raw_fd(), &name, flags, 0o666) {
                fd if fd >= 0 => Ok(fd as i32),
                e => Err(std::io::Error::from_raw_os_error(-e as i32)),
            }
        })?;
        // SAFETY: create_high just made `fd`; the File becomes its only owner.
        Ok(unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) })
    }

    fn open(&self, path: &Path, program: &str, parent: Option<u32>) -> Result<(), TraceError> {
        let io = |source| TraceError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = self.create_file(path).map_err(io)?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        let header = Header {
            format: FORMAT.to_string(),
            version: VERSION,
            program: program.to_string(),
            pid: std::process::id(),
            parent,
        };
        let line = serde_json::to_string(&header).map_err(|e| TraceError::Parse {
            path: path.to_path_buf(),
            line: 1,
            reason: e.to_string(),
        })?;
        writeln!(w, "{line}").map_err(io)?;
        *lock(&self.out) = Some(w);
        Ok(())
    }

    /// Nanoseconds since the run began.
    pub fn now_ns(&self) -> u64 {
        self.t0.elapsed().as_nanos() as u64
    }

    /// Records one event (a write error stops the trace; the run goes on).
    pub fn record(&self, e: &Event) {
        let mut g = lock(&self.out);
        if let Some(w) = g.as_mut() {
            if e.write_line(w).is_err() {
                crate::diag!(
                    "multios lwk: --trace {}: writing failed; the trace stops here",
                    self.path.display()
                );
                *g = None;
            }
        }
    }

    /// Flushes the buffered events and holds the writer until the guard drops: taken across
    /// fork(2), so that neither process writes the other's events and no event is lost between.
    pub(crate) fn hold_flushed(&self) -> MutexGuard<'_, Option<BufWriter<File>>> {
        let mut g = lock(&self.out);
        if let Some(w) = g.as_mut() {
            let _ = w.flush();
        }
        g
    }

    /// In a forked child: the parent's writer (empty: flushed before the fork) is closed here, and
    /// the child writes `FILE.PID` of its own.
    pub fn become_child(&self, program: &str) {
        drop(lock(&self.out).take());
        let pid = std::process::id();
        let path = child_path(&self.path, pid);
        if let Err(e) = self.open(&path, program, Some(parent_pid())) {
            crate::diag!("multios lwk: forked child {pid}: {e}; its events are not traced");
        }
    }

    /// Writes the guest's memory map: the events before it were made under it (an execve writes
    /// the map of the image it replaces).
    pub fn maps(&self, maps: &str) {
        if let Some(w) = lock(&self.out).as_mut() {
            let _ = writeln!(w, "{}", serde_json::json!({ "maps": maps }));
        }
    }

    /// Writes the final memory map and closes the trace.
    pub fn finish(&self, maps: &str) {
        self.maps(maps);
        if let Some(mut w) = lock(&self.out).take() {
            if let Err(e) = w.flush() {
                crate::diag!("multios lwk: --trace {}: {e}", self.path.display());
            }
        }
    }
}

/// The trace file of a forked child: `FILE.PID`.
pub fn child_path(path: &Path, pid: u32) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(format!(".{pid}"));
    PathBuf::from(s)
}

fn parent_pid() -> u32 {
    std::os::unix::process::parent_id()
}
