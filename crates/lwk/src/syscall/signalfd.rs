//! signalfd/signalfd4, and the reads and closes of a signalfd (the state and its pipe are in
//! `signal/sfd.rs`): as Linux, a read takes pending signals of the fd's mask off the calling
//! thread's and the process's pending sets and returns one `struct signalfd_siginfo` per signal;
//! with none pending it fails with EAGAIN on a non-blocking fd and otherwise waits, interruptibly
//! like any blocking call.

use crate::kernel::{lock, Kernel, Reply};
use crate::signal::sfd::SignalFd;
use crate::signal::{ERESTARTSYS, UNBLOCKABLE};
use std::sync::atomic::Ordering;

/// The size of `struct signalfd_siginfo`.
const RECORD: u64 = 128;

fn errno(e: i32) -> Reply {
    Reply::Ret(-(e as i64))
}

impl Kernel {
    /// signalfd(fd, mask, size) and signalfd4(fd, mask, size, flags): a new signalfd (fd = -1)
    /// or a new mask for an existing one.
    pub(super) fn signalfd4(&self, nr: u64, a: [u64; 6]) -> Reply {
        let flags = if nr == libc::SYS_signalfd4 as u64 { a[3] as i32 } else { 0 };
        if flags & !(libc::SFD_CLOEXEC | libc::SFD_NONBLOCK) != 0 || a[2] != 8 {
            return errno(libc::EINVAL);
        }
        if !self.mem.in_app(a[1], 8) {
            return errno(libc::EFAULT);
        }
        let mask = self.mem.read_u64(a[1]) & !UNBLOCKABLE;
        let fd = a[0] as i32;
        if fd != -1 {
            if fd < 0 || fd >= self.fd_floor || crate::sys::fd_file_id(fd).is_err() {
                return errno(libc::EBADF);
            }
            let Some((id, _)) = self.signalfd_of(fd) else {
                return errno(libc::EINVAL);
            };
            if let Some(s) = lock(&self.signals.sfds).get_mut(&id) {
                s.mask = mask;
            }
            self.sync_signalfds();
            return Reply::Ret(fd as i64);
        }
        // Signalfds the guest closed since: their pipes go before a new one is made.
        self.collect_signalfds();
        let (read, handle) = match self.new_signalfd_pipe() {
            Ok(p) => p,
            Err(e) => return Reply::Ret(e),
        };
        if flags & libc::SFD_NONBLOCK != 0 {
            crate::sys::fcntl_int(read, libc::F_SETFL, libc::O_NONBLOCK);
        }
        if flags & libc::SFD_CLOEXEC == 0 {
            crate::sys::fcntl_int(read, libc::F_SETFD, 0);
        }
        let id = match crate::sys::fd_file_id(read) {
            Ok(id) => id,
            Err(e) => {
                crate::sys::close(read);
                crate::sys::close(handle);
                return errno(e.raw_os_error().unwrap_or(libc::EBADF));
            }
        };
        // At or above the guest's soft limit: closed, EMFILE (as every fd made for the guest).
        let r = self.limit_fd(read as i64);
        if r < 0 {
            crate::sys::close(handle);
            return Reply::Ret(r);
        }
        let mut table = lock(&self.signals.sfds);
        table.insert(
            id,
            SignalFd {
                mask,
                handle,
                armed: false,
            },
        );
        self.signals.sfd_count.store(table.len(), Ordering::Release);
        drop(table);
        self.sync_signalfds();
        Reply::Ret(r)
    }

    /// The LWK's part of `read` and `close` when the guest has signalfds: None when `fd` is not
    /// one (the call goes on as usual).
    pub(super) fn signalfd_call(&self, cpu: usize, nr: u64, a: &[u64; 6]) -> Option<Reply> {
        if !self.has_signalfds() {
            return None;
        }
        match nr as i64 {
            libc::SYS_read => {
                let (_, mask) = self.signalfd_of(a[0] as i32)?;
                Some(self.signalfd_read(cpu, a[0] as i32, mask, a[1], a[2]))
            }
            libc::SYS_close => {
                self.signalfd_of(a[0] as i32)?;
                let r = crate::sys::raw_syscall(nr, *a);
                self.collect_signalfds();
                Some(Reply::Ret(r))
            }
            _ => None,
        }
    }

    /// read(fd, buf, len) of a signalfd with mask `mask`.
    fn signalfd_read(&self, cpu: usize, fd: i32, mask: u64, buf: u64, len: u64) -> Reply {
        if len < RECORD {
            return errno(libc::EINVAL);
        }
        let room = (len / RECORD).min(64 * 1024);
        if !self.mem.in_app(buf, room * RECORD) {
            return errno(libc::EFAULT);
        }
        let mut got = 0u64;
        let mut missed = false;
        loop {
            // The mask may change meanwhile (signalfd4 on this fd from another thread).
            let mask = self.signalfd_of(fd).map_or(mask, |(_, m)| m);
            if let Some((sig, info)) = self.take_signal_in(cpu, Some(mask)) {
                self.mem
                    .write(buf + got * RECORD, &crate::signal::sfd::record(sig, &info));
                got += 1;
                if got == room {
                    break;
                }
                continue;
            }
            if got > 0 {
                break;
            }
            let status = crate::sys::fcntl_int(fd, libc::F_GETFL, 0);
            if status < 0 {
                return Reply::Ret(status);
            }
            if status as i32 & libc::O_NONBLOCK != 0 {
                return errno(libc::EAGAIN);
            }
            if self.deliverable(cpu) {
                // A handled signal interrupts the wait (EINTR, or the read again under
                // SA_RESTART), as Linux's signalfd_dequeue does.
                return Reply::Ret(ERESTARTSYS);
            }
            if lock(&self.exit).is_some() {
                return errno(libc::EINTR);
            }
            if missed {
                // The pipe says a signal of the mask is pending, but for another thread.
                std::thread::sleep(std::time::Duration::from_micros(500));
            }
            missed = self.wait_signalfd(cpu, fd);
        }
        Reply::Ret((got * RECORD) as i64)
    }

    /// Waits until signalfd `fd` is readable (true), or a while, or the signal pump's kick.
    fn wait_signalfd(&self, cpu: usize, fd: i32) -> bool {
        let slot = self.signals.serving.get(cpu);
        if let Some(s) = slot {
            s.store(crate::sys::pthread_self(), Ordering::Release);
        }
        // Not forever: a kick that came just before the poll would otherwise be missed.
        let ready = crate::sys::poll_readable(fd, 50);
        if let Some(s) = slot {
            s.store(0, Ordering::Release);
        }
        matches!(ready, Ok(true))
    }
}
