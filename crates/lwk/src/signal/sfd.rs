//! signalfd in the LWK: the guest's signals are the VMM's (pending sets in `queue.rs`), so a
//! signalfd cannot be the host's. Each one is a host **pipe**: the guest holds its read end (so
//! poll, select and epoll — delegated, served by the host kernel — see it like any fd), and the
//! VMM keeps one read-write, non-blocking handle on the same pipe, with which it keeps the pipe
//! readable exactly while a signal of the fd's mask is pending ("armed": one byte in the pipe).
//! Reads of the guest's fd are the LWK's (`syscall/signalfd.rs`): they take the signals off the
//! pending sets and return `struct signalfd_siginfo` records, as Linux does.
//!
//! Why a pipe, not an eventfd: the LWK must recognise a signalfd from any fd the guest reads —
//! including dup'ed ones and ones received over a socket — and every eventfd shares one inode,
//! while each pipe has its own (st_dev, st_ino); the table is keyed by it.
//!
//! Lock order: the table, then the kernel's `threads`, then `pending` (as everywhere else).

use super::info::{SigInfo, SI_KERNEL, SI_TIMER};
use std::collections::BTreeMap;

/// One signalfd: its mask and the VMM's handle on its pipe.
#[derive(Debug, Clone, Copy)]
pub struct SignalFd {
    /// The signals it reports (bit sig-1; never SIGKILL or SIGSTOP).
    pub mask: u64,
    /// The VMM's read-write, non-blocking descriptor on the pipe (in the VMM's fd range).
    pub handle: i32,
    /// True while the pipe holds its one byte (readable).
    pub armed: bool,
}

/// The guest's signalfds, keyed by their pipe's (st_dev, st_ino).
pub type Table = BTreeMap<(u64, u64), SignalFd>;

/// The 128-byte `struct signalfd_siginfo` Linux's read of a signalfd returns for signal `sig`
/// (fs/signalfd.c, `signalfd_copyinfo`): which fields are filled follows the siginfo's layout
/// (kernel/signal.c, `siginfo_layout`).
pub fn record(sig: u64, info: &SigInfo) -> [u8; 128] {
    let si = info.bytes(sig);
    let u32_at = |o: usize| u32::from_le_bytes([si[o], si[o + 1], si[o + 2], si[o + 3]]);
    let u64_at = |o: usize| u64::from_le_bytes(si[o..o + 8].try_into().unwrap_or_default());
    let mut r = [0u8; 128];
    let put32 = |r: &mut [u8; 128], at: usize, v: u32| r[at..at + 4].copy_from_slice(&v.to_le_bytes());
    put32(&mut r, 0, sig as u32);
    put32(&mut r, 4, u32_at(4)); // ssi_errno
    put32(&mut r, 8, u32_at(8)); // ssi_code
    let code = info.code;
    let fault = matches!(
        sig as i32,
        libc::SIGSEGV | libc::SIGBUS | libc::SIGILL | libc::SIGFPE | libc::SIGTRAP
    );
    if info.trap.is_some() || (code > 0 && code < SI_KERNEL && fault) {
        r[72..80].copy_from_slice(&u64_at(16).to_le_bytes()); // ssi_addr
    } else if code == SI_TIMER {
        put32(&mut r, 24, u32_at(16)); // ssi_tid: the timer id
        put32(&mut r, 32, u32_at(20)); // ssi_overrun
        put32(&mut r, 44, u32_at(24)); // ssi_int
        r[48..56].copy_from_slice(&u64_at(24).to_le_bytes()); // ssi_ptr
    } else if code > 0 && code < SI_KERNEL && sig as i32 == libc::SIGCHLD {
        put32(&mut r, 12, u32_at(16));
        put32(&mut r, 16, u32_at(20));
        put32(&mut r, 40, u32_at(24)); // ssi_status
        r[56..64].copy_from_slice(&u64_at(32).to_le_bytes()); // ssi_utime
        r[64..72].copy_from_slice(&u64_at(40).to_le_bytes()); // ssi_stime
    } else if code > 0 && code < SI_KERNEL && sig as i32 == libc::SIGPOLL {
        put32(&mut r, 28, u32_at(16)); // ssi_band
        put32(&mut r, 20, u32_at(24)); // ssi_fd
    } else {
        put32(&mut r, 12, u32_at(16)); // ssi_pid
        put32(&mut r, 16, u32_at(20)); // ssi_uid
        if code < 0 {
            // SI_QUEUE, SI_TKILL, SI_MESGQ…: the value too.
            put32(&mut r, 44, u32_at(24));
            r[48..56].copy_from_slice(&u64_at(24).to_le_bytes());
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u32_at(r: &[u8; 128], o: usize) -> u32 {
        u32::from_le_bytes([r[o], r[o + 1], r[o + 2], r[o + 3]])
    }

    #[test]
    fn a_sigqueue_record_carries_sender_and_value() {
        let mut fields = [0u64; 14];
        fields[0] = 4321 | (1000u64 << 32);
        fields[1] = 0xdead_beef_0000_0007;
        let info = SigInfo {
            code: super::super::SI_QUEUE,
            pid: 4321,
            uid: 1000,
            trap: None,
            fields: Some(fields),
        };
        let r = record(40, &info);
        assert_eq!(u32_at(&r, 0), 40);
        assert_eq!(u32_at(&r, 8) as i32, -1);
        assert_eq!((u32_at(&r, 12), u32_at(&r, 16)), (4321, 1000));
        assert_eq!(u32_at(&r, 44), 7, "ssi_int");
        assert_eq!(
            u64::from_le_bytes(r[48..56].try_into().expect("8 bytes")),
            0xdead_beef_0000_0007
        );
    }

    #[test]
    fn a_kill_record_has_no_value_and_a_timer_record_its_id_and_overrun() {
        let kill = SigInfo {
            code: super::super::SI_USER,
            pid: 9,
            uid: 3,
            ..Default::default()
        };
        let r = record(10, &kill);
        assert_eq!(
            (u32_at(&r, 0), u32_at(&r, 12), u32_at(&r, 16), u32_at(&r, 44)),
            (10, 9, 3, 0)
        );
        let mut fields = [0u64; 14];
        fields[0] = 5 | (2u64 << 32);
        fields[1] = 77;
        let timer = SigInfo {
            code: SI_TIMER,
            fields: Some(fields),
            ..Default::default()
        };
        let r = record(34, &timer);
        assert_eq!((u32_at(&r, 24), u32_at(&r, 32), u32_at(&r, 44)), (5, 2, 77));
        assert_eq!(u32_at(&r, 12), 0, "a timer's record names no sender");
    }
}
