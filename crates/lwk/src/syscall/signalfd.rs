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
        let flags = if nr == libc::SYS_signalfd4 as u64 {
            a[3] as i32
        } else {
            0
        };
        if flags & !(libc::SFD_CLOEXEC | libc::SFD_NONBLOCK) != 0 || a[2] != 8 {
            return errno(libc::EINVAL);
        }
        let Ok(mask) = self.mem.read_user_u64(a[1]) else {
            return errno(libc::EFAULT);
        };
        let mask = mask & !UNBLOCKABLE;
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

    /// The LWK's part of `read`, `readv` and `close` when the guest has signalfds: None when
    /// `fd` is not one (the call goes on as usual).
    pub(super) fn signalfd_call(&self, cpu: usize, nr: u64, a: &[u64; 6]) -> Option<Reply> {
        if !self.has_signalfds() {
            return None;
        }
        match nr as i64 {
            libc::SYS_read | libc::SYS_readv => {
                let (_, mask) = self.signalfd_of(a[0] as i32)?;
                let layout = super::layout::layout(nr as i64)?;
                // The buffers as any read checks them: in the window, writable by user code.
                let checked = match super::check::check_call(&self.mem, nr as i64, layout, a, self.fd_floor) {
                    Ok(c) => c,
                    Err(e) => return Some(Reply::Ret(e)),
                };
                let into: Vec<(u64, u64)> = if nr as i64 == libc::SYS_read {
                    vec![(a[1], a[2])]
                } else {
                    checked.iovecs().chunks(2).map(|p| (p[0], p[1])).collect()
                };
                Some(self.signalfd_read(cpu, a[0] as i32, mask, &into))
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

    /// A read of signalfd `fd` (mask `mask`) into the buffers `into` (base, length): whole
    /// records only, at least one (waiting for it unless the fd is non-blocking).
    fn signalfd_read(&self, cpu: usize, fd: i32, mask: u64, into: &[(u64, u64)]) -> Reply {
        let total: u64 = into.iter().map(|&(_, l)| l).fold(0, u64::saturating_add);
        if total < RECORD {
            return errno(libc::EINVAL);
        }
        let room = (total / RECORD).min(64 * 1024);
        let mut got = 0u64;
        let mut missed = false;
        loop {
            // The mask may change meanwhile (signalfd4 on this fd from another thread).
            let mask = self.signalfd_of(fd).map_or(mask, |(_, m)| m);
            if let Some((sig, info)) = self.take_signal_in(cpu, Some(mask)) {
                self.scatter(into, got * RECORD, &crate::signal::sfd::record(sig, &info));
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

    /// Writes `bytes` at offset `at` of the concatenation of the buffers `into`.
    fn scatter(&self, into: &[(u64, u64)], mut at: u64, mut bytes: &[u8]) {
        for &(base, len) in into {
            if bytes.is_empty() {
                break;
            }
            if at >= len {
                at -= len;
                continue;
            }
            let n = (len - at).min(bytes.len() as u64) as usize;
            self.mem.write(base + at, &bytes[..n]);
            bytes = &bytes[n..];
            at = 0;
        }
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
