//! The kernel's process events (the proc connector, linux/cn_proc.h): a fork, an exec, a command
//! name change of any process arrives as one netlink datagram, so `map run` places a program's new
//! threads when they appear instead of walking /proc on a timer.

use std::os::fd::OwnedFd;

/// What happened (the fields `map run` needs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// `child_tid` of process `child_tgid` was created. For a new process, `parent_tgid` is the
    /// process that made it; for a new thread (`child_tid != child_tgid`) the kernel reports the
    /// parent of the thread's *process* (a thread's real parent is its process's), not the process
    /// that made the thread: match a thread by `child_tgid`.
    Fork {
        parent_tgid: u32,
        child_tid: u32,
        child_tgid: u32,
    },
    /// Thread `tid` of `tgid` called execve.
    Exec { tid: u32, tgid: u32 },
    /// Thread `tid` of `tgid` changed its command name (prctl PR_SET_NAME, pthread_setname_np).
    Comm { tid: u32, tgid: u32 },
    /// Thread `tid` of `tgid` ended.
    Exit { tid: u32, tgid: u32 },
}

const FORK: u32 = 0x1;
const EXEC: u32 = 0x2;
const COMM: u32 = 0x200;
const EXIT: u32 = 0x8000_0000;

/// Offsets: nlmsghdr (16) + cn_msg (20) = the proc_event; its event data 16 bytes further.
const EVENT: usize = 36;
const DATA: usize = EVENT + 16;

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    b.get(off..off + 4)?.try_into().ok().map(u32::from_ne_bytes)
}

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    b.get(off..off + 8)?.try_into().ok().map(u64::from_ne_bytes)
}

/// The events in one datagram (one or more netlink messages), each with the kernel's time of it
/// (CLOCK_MONOTONIC, ns).
pub fn parse(buf: &[u8]) -> Vec<(u64, Event)> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(len) = u32_at(buf, at) {
        let len = len as usize;
        if len < 16 || at + len > buf.len() {
            break;
        }
        let m = &buf[at..at + len];
        let ev = match u32_at(m, EVENT) {
            Some(FORK) => u32_at(m, DATA + 4)
                .zip(u32_at(m, DATA + 8))
                .zip(u32_at(m, DATA + 12))
                .map(|((parent_tgid, child_tid), child_tgid)| Event::Fork {
                    parent_tgid,
                    child_tid,
                    child_tgid,
                }),
            Some(k @ (EXEC | COMM | EXIT)) => {
                u32_at(m, DATA)
                    .zip(u32_at(m, DATA + 4))
                    .map(|(tid, tgid)| match k {
                        EXEC => Event::Exec { tid, tgid },
                        COMM => Event::Comm { tid, tgid },
                        _ => Event::Exit { tid, tgid },
                    })
            }
            _ => None,
        };
        let t = u64_at(m, EVENT + 8).unwrap_or(0);
        out.extend(ev.map(|e| (t, e)));
        at += (len + 3) & !3;
    }
    out
}

/// A subscription to the process events.
pub struct Listener {
    fd: OwnedFd,
    buf: Vec<u8>,
    /// Datagrams lost because the receive buffer overflowed (the caller walks /proc instead).
    pub overflows: u64,
}

impl Listener {
    pub fn new() -> std::io::Result<Listener> {
        Ok(Listener {
            fd: crate::sys::proc_events()?,
            buf: vec![0; 8192],
            overflows: 0,
        })
    }

    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// Every event queued now with its time (none when nothing is); `lost` is set when some were
    /// dropped.
    pub fn drain(&mut self, lost: &mut bool) -> Vec<(u64, Event)> {
        let mut out = Vec::new();
        loop {
            match crate::sys::recv_nowait(&self.fd, &mut self.buf) {
                Ok(0) => break,
                Ok(n) => out.extend(parse(&self.buf[..n])),
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    self.overflows += 1;
                    *lost = true;
                }
                Err(_) => break,
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(what: u32, data: &[u32]) -> Vec<u8> {
        let mut m = vec![0u8; DATA];
        m[EVENT..EVENT + 4].copy_from_slice(&what.to_ne_bytes());
        for d in data {
            m.extend_from_slice(&d.to_ne_bytes());
        }
        let len = m.len() as u32;
        m[..4].copy_from_slice(&len.to_ne_bytes());
        m
    }

    #[test]
    fn parses_fork_exec_comm_exit() {
        let mut buf = message(FORK, &[10, 10, 11, 11]);
        buf.extend(message(EXEC, &[11, 11]));
        buf.extend(message(COMM, &[12, 11]));
        buf.extend(message(EXIT, &[12, 11, 0, 0, 0, 0]));
        buf.extend(message(0x4, &[1, 2, 3, 4])); // a uid change: ignored
        assert_eq!(
            parse(&buf).into_iter().map(|e| e.1).collect::<Vec<_>>(),
            vec![
                Event::Fork {
                    parent_tgid: 10,
                    child_tid: 11,
                    child_tgid: 11
                },
                Event::Exec { tid: 11, tgid: 11 },
                Event::Comm { tid: 12, tgid: 11 },
                Event::Exit { tid: 12, tgid: 11 },
            ]
        );
        assert!(parse(&buf[..20]).is_empty());
    }

    #[test]
    fn sees_a_child_fork_and_exec() {
        let mut l = Listener::new().expect("proc connector (root or CAP_NET_ADMIN)");
        let mut child = std::process::Command::new("/bin/true").spawn().expect("true");
        let pid = child.id();
        let _ = child.wait();
        let mut seen = Vec::new();
        let mut lost = false;
        for _ in 0..100 {
            seen.extend(l.drain(&mut lost).into_iter().map(|e| e.1));
            if seen
                .iter()
                .any(|e| matches!(e, Event::Exec { tgid, .. } if *tgid == pid))
            {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(
            seen.iter()
                .any(|e| matches!(e, Event::Fork { child_tgid, .. } if *child_tgid == pid)),
            "fork of {pid} in {seen:?}"
        );
        assert!(seen
            .iter()
            .any(|e| matches!(e, Event::Exec { tgid, .. } if *tgid == pid)));
    }
}
