//! vfork, and posix_spawn's clone(CLONE_VM | CLONE_VFORK), served as a fork (`machine/fork.rs`)
//! with vfork's two promises kept where programs rely on them:
//!
//! * the parent's calling thread waits until the child has exec'd or exited;
//! * what the child wrote just above the parent's stack pointer — the frames of the functions
//!   that called vfork, where glibc's posix_spawn keeps the errno of a failed exec
//!   (`args.err`), and where a vfork caller keeps the locals the child may set — is in the
//!   parent's memory when the parent goes on.
//!
//! Without them `posix_spawn` of a program that does not exist returned 0 and a child that
//! exited 127, where Linux returns ENOENT (make, Java's ProcessBuilder and Python's
//! `os.posix_spawn` report the error from it).
//!
//! How (the child's side in `syscall/vfork.rs`): a socket pair made before the fork. The child keeps one end and, at its exec's point
//! of no return or at its exit, sends its copy of [`SPAN`] bytes from the page of the parent's
//! stack pointer (clipped to the guest's mapping there) and closes it; the parent's vCPU thread
//! waits on the other end, writes what it receives into its own memory at the same address and
//! resumes the guest. A child killed by a signal sends nothing: the parent resumes at the end
//! of the stream, as after a killed vfork child. Only the calling thread's own stack pages are
//! written back — it is blocked in the call, so nothing else of the parent writes them; the
//! child's other writes stay in its copy (POSIX leaves them undefined for vfork).

use std::io;

/// Bytes written back from the page of the parent's stack pointer upwards.
pub const SPAN: u64 = 16 * 1024;

/// The child's end of the handshake: its socket and the range to send.
#[derive(Debug, Clone, Copy)]
pub struct Release {
    pub fd: i32,
    pub lo: u64,
    pub hi: u64,
}

/// The parent's side: waits until the child hands back `[lo, hi)` (written into the parent's
/// memory through `write`) or the stream ends (the child died). Returns what was received.
pub fn wait_for_child(fd: i32, lo: u64, hi: u64, write: impl FnOnce(u64, &[u8])) -> io::Result<usize> {
    let want = (hi - lo) as usize;
    let mut buf = vec![0u8; want];
    let got = crate::sys::recv_all(fd, &mut buf)?;
    if got == want && want > 0 {
        write(lo, &buf);
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_stream_writes_nothing_back() {
        let (a, b) = crate::sys::socketpair_high(3).expect("socketpair");
        crate::sys::send_all(a, &[1, 2, 3]).expect("send");
        crate::sys::close(a);
        let mut wrote = false;
        let got = wait_for_child(b, 0x1000, 0x2000, |_, _| wrote = true).expect("recv");
        crate::sys::close(b);
        assert_eq!(got, 3);
        assert!(!wrote, "a child that died half-way hands back nothing");
    }

    #[test]
    fn a_whole_range_is_written_at_its_address() {
        let (a, b) = crate::sys::socketpair_high(3).expect("socketpair");
        let data: Vec<u8> = (0..4096u32).map(|i| i as u8).collect();
        crate::sys::send_all(a, &data).expect("send");
        crate::sys::close(a);
        let mut seen = None;
        wait_for_child(b, 0x7000, 0x8000, |at, d| seen = Some((at, d.to_vec()))).expect("recv");
        crate::sys::close(b);
        assert_eq!(seen, Some((0x7000, data)));
    }
}
