//! The kernel's side of the guest's signalfds (`sfd.rs` holds the table and the records): which
//! fd is a signalfd, keeping each pipe armed exactly while a signal of its mask is pending, new
//! pipes, and the table across fork and exec. Apart from `sfd.rs` so that the signal state
//! `Kernel` holds does not import `Kernel` (no module cycle).
//!
//! Lock order: the table, then the kernel's `threads`, then `pending` (as everywhere else).

use super::sfd::{SignalFd, Table};
use crate::kernel::{lock, Kernel};
use std::sync::atomic::Ordering;

impl Kernel {
    /// True when the guest has a signalfd (the per-call check is then one load).
    pub(crate) fn has_signalfds(&self) -> bool {
        self.signals.sfd_count.load(Ordering::Acquire) > 0
    }

    /// The signalfd the guest's descriptor `fd` is, if it is one: its key and mask.
    pub(crate) fn signalfd_of(&self, fd: i32) -> Option<((u64, u64), u64)> {
        if !self.has_signalfds() || fd < 0 || fd >= self.fd_floor {
            return None;
        }
        let id = crate::sys::fd_file_id(fd).ok()?;
        lock(&self.signals.sfds).get(&id).map(|s| (id, s.mask))
    }

    /// Every signal pending anywhere in the guest (the process's set and every live thread's).
    fn pending_anywhere(&self) -> u64 {
        let threads = lock(&self.threads);
        let process = lock(&self.signals.pending).set;
        threads
            .iter()
            .filter(|t| t.alive)
            .fold(process, |all, t| all | t.sig.pending.set)
    }

    /// Makes each signalfd's pipe readable exactly while a signal of its mask is pending. Called
    /// after every change of a pending set and of a mask; the caller holds none of the locks.
    pub(crate) fn sync_signalfds(&self) {
        if !self.has_signalfds() {
            return;
        }
        let mut table = lock(&self.signals.sfds);
        let pending = self.pending_anywhere();
        for s in table.values_mut() {
            let want = pending & s.mask != 0;
            if want && !s.armed {
                s.armed = crate::sys::write_byte(s.handle);
            } else if !want && s.armed {
                crate::sys::read_byte(s.handle);
                s.armed = false;
            }
        }
    }

    /// Forgets the signalfds the guest no longer holds (closed, replaced by dup2, closed on
    /// exec): their pipes are closed. Lists the guest's fds, so it runs only when a signalfd is
    /// closed or made, and after exec.
    pub(crate) fn collect_signalfds(&self) {
        if !self.has_signalfds() {
            return;
        }
        let held: std::collections::BTreeSet<(u64, u64)> = crate::sys::guest_fds(self.fd_floor)
            .into_iter()
            .filter_map(|fd| crate::sys::fd_file_id(fd).ok())
            .collect();
        let mut table = lock(&self.signals.sfds);
        table.retain(|id, s| {
            let keep = held.contains(id);
            if !keep {
                crate::sys::close(s.handle);
            }
            keep
        });
        self.signals.sfd_count.store(table.len(), Ordering::Release);
    }

    /// In a forked child: the pipes are shared with the parent, whose signals they report, so
    /// each signalfd gets a pipe of its own, put in place of the parent's under every fd number
    /// that referred to it (with its close-on-exec and non-blocking flags), as a child's
    /// signalfd reports the child's signals on Linux.
    pub(crate) fn signalfds_forked(&self) {
        if !self.has_signalfds() {
            return;
        }
        let fds: Vec<(i32, (u64, u64))> = crate::sys::guest_fds(self.fd_floor)
            .into_iter()
            .filter_map(|fd| Some((fd, crate::sys::fd_file_id(fd).ok()?)))
            .collect();
        let old = std::mem::take(&mut *lock(&self.signals.sfds));
        let mut fresh = Table::new();
        for (id, s) in old {
            crate::sys::close(s.handle);
            let mine: Vec<i32> = fds.iter().filter(|(_, i)| *i == id).map(|(fd, _)| *fd).collect();
            let Some(&first) = mine.first() else {
                continue;
            };
            let Ok((read, handle)) = self.new_signalfd_pipe() else {
                continue;
            };
            let status = crate::sys::fcntl_int(first, libc::F_GETFL, 0).max(0) as i32;
            for &fd in &mine {
                let cloexec = crate::sys::fcntl_int(fd, libc::F_GETFD, 0).max(0) as i32 & libc::FD_CLOEXEC;
                let flags = if cloexec != 0 { libc::O_CLOEXEC } else { 0 };
                if crate::sys::dup_onto(read, fd, flags).is_ok() {
                    crate::sys::fcntl_int(fd, libc::F_SETFL, status & libc::O_NONBLOCK);
                }
            }
            if let Ok(new_id) = crate::sys::fd_file_id(read) {
                fresh.insert(
                    new_id,
                    SignalFd {
                        mask: s.mask,
                        handle,
                        armed: false,
                    },
                );
            } else {
                crate::sys::close(handle);
            }
            crate::sys::close(read);
        }
        self.signals.sfd_count.store(fresh.len(), Ordering::Release);
        *lock(&self.signals.sfds) = fresh;
        self.sync_signalfds();
    }

    /// A new pipe for a signalfd: its read end (close-on-exec, at the lowest free number, for
    /// the guest) and the VMM's read-write, non-blocking handle on it (in the VMM's range).
    pub(crate) fn new_signalfd_pipe(&self) -> Result<(i32, i32), i64> {
        let errno = |e: std::io::Error| -(e.raw_os_error().unwrap_or(libc::EMFILE) as i64);
        // The write end and the reopened end are the VMM's temporaries in the guest's range.
        // (procfs is opened first: its own opening takes the same lock.)
        crate::procfs::init().map_err(|_| -(libc::EACCES as i64))?;
        let _low = crate::sys::low_fds();
        let (read, write) = crate::sys::pipe_cloexec().map_err(errno)?;
        // Reopened through procfs, a pipe end opened O_RDWR can both read and write it.
        let low = crate::procfs::reopen(read, libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC);
        crate::sys::close(write);
        if low < 0 {
            crate::sys::close(read);
            return Err(low);
        }
        let handle = crate::sys::move_fd_high(low as i32, self.fd_floor);
        crate::sys::close(low as i32);
        match handle {
            Ok(h) => Ok((read, h)),
            Err(e) => {
                crate::sys::close(read);
                Err(errno(e))
            }
        }
    }
}
