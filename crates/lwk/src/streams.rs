//! The standard streams a VMM shares with its guest, and where the VMM's own messages go.
//!
//! The guest's fds 0–2 are the VMM's. Two consequences, both handled here:
//!
//! * A stream closed when multios started (`prog 2>&-`) holds Rust's `/dev/null` placeholder
//!   (`multios_host::stdio`); natively the program would find it closed, so it is closed before
//!   the guest runs ([`Streams::close_placeholders`]).
//! * A guest that closes its stderr and opens a file gets fd 2 (a daemon's log): a message of the
//!   VMM written to fd 2 would land in that file. The VMM's messages ([`diag!`](crate::diag)) go
//!   to a copy of its stderr made before the guest ran, kept in the VMM's fd range above the
//!   floor (close-on-exec, refused to the guest like every fd there), or nowhere when stderr was
//!   closed at start.
//!
//! When the run ends, [`Streams::restore`] puts the VMM's own streams back on 0–2 (a placeholder
//! where one was closed), so that what the CLI prints after the run reaches the user's terminal,
//! not a file the guest left on those numbers.

use crate::sys;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};

/// The fd the VMM's messages go to: `NOT_SET` before a run (stderr itself), `DISCARD` when stderr
/// was closed at start. A plain number, not a lock: a forked child VMM writes to it too.
static DIAG_FD: AtomicI32 = AtomicI32::new(NOT_SET);
const NOT_SET: i32 = -1;
const DISCARD: i32 = -2;

/// Writes one line of the VMM's own (`multios lwk: …`) to where [`DIAG_FD`] says, in one write.
pub fn write_line(args: std::fmt::Arguments<'_>) {
    let mut line = args.to_string();
    line.push('\n');
    match DIAG_FD.load(Ordering::Relaxed) {
        NOT_SET => eprint!("{line}"),
        DISCARD => {}
        fd => sys::write_all_to(fd, line.as_bytes()),
    }
}

/// `eprintln!` for the VMM's messages: never into a file the guest has on fd 2.
#[macro_export]
macro_rules! diag {
    ($($arg:tt)*) => {
        $crate::streams::write_line(format_args!($($arg)*))
    };
}

/// The VMM's own standard streams, kept above the floor while the guest uses 0–2.
pub struct Streams {
    saved: [Option<OwnedFd>; 3],
}

impl Streams {
    /// Copies the VMM's open standard streams above `floor` and points the VMM's messages at
    /// the copy of stderr.
    pub fn take(floor: i32) -> Streams {
        let saved = [0, 1, 2].map(|fd| {
            if multios_host::stdio::closed_at_start(fd) == Some(true) || !sys::fd_is_open(fd) {
                None
            } else {
                sys::dup_high(fd, floor).ok()
            }
        });
        let diag = match &saved[2] {
            Some(fd) => fd.as_raw_fd(),
            None => DISCARD,
        };
        DIAG_FD.store(diag, Ordering::Relaxed);
        Streams { saved }
    }

    /// Closes the runtime's `/dev/null` placeholders of streams that were closed at start, so
    /// that the guest finds them closed. Call just before the guest runs.
    pub fn close_placeholders(&self) {
        let _low = sys::low_fds();
        for fd in multios_host::stdio::placeholders() {
            sys::close(fd);
        }
    }

    /// Puts the VMM's streams back on 0–2 (a `/dev/null` placeholder where a stream was closed
    /// at start) once the guest is gone, and its messages back on stderr. Dropping does the same
    /// (a run that failed before its guest started).
    pub fn restore(self) {
        drop(self);
    }
}

impl Drop for Streams {
    fn drop(&mut self) {
        let _low = sys::low_fds();
        for (fd, saved) in self.saved.iter().enumerate() {
            let fd = fd as i32;
            match saved {
                Some(s) => {
                    let _ = sys::dup_onto(s.as_raw_fd(), fd, 0);
                }
                None => sys::null_onto(fd),
            }
        }
        DIAG_FD.store(NOT_SET, Ordering::Relaxed);
    }
}
