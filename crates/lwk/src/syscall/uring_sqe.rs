//! The check of one io_uring submission entry before the kernel sees it (`uring.rs`): what each
//! operation the LWK serves may point at, and the NOP that replaces an entry that fails.

use crate::kernel::Kernel;

// struct io_uring_sqe field offsets.
const OPCODE: usize = 0;
const FLAGS: usize = 1;
const FD: usize = 4;
const OFF: usize = 8; // off / addr2
const ADDR: usize = 16;
const LEN: usize = 24;
const OP_FLAGS: usize = 28;
const USER_DATA: usize = 32;
const SPLICE_FD_IN: usize = 44; // also file_index, addr_len (u16)

const IOSQE_FIXED_FILE: u8 = 1 << 0;
const IOSQE_BUFFER_SELECT: u8 = 1 << 5;
/// IOSQE_IO_LINK | IOSQE_IO_HARDLINK: the next entry runs after this one.
pub(super) const IOSQE_LINKS: u8 = (1 << 2) | (1 << 3);
/// Flags a replacement NOP keeps: drain, link, hardlink, async, CQE skip on success.
const IOSQE_KEPT: u8 = (1 << 1) | (1 << 2) | (1 << 3) | (1 << 4) | (1 << 6);
/// IORING_NOP_INJECT_RESULT: the NOP completes with `len` as its result.
const NOP_INJECT_RESULT: u32 = 1;
const NOP_FILE: u32 = 1 << 1;
const SPLICE_F_FD_IN_FIXED: u32 = 1 << 31;
const TIMEOUT_UPDATE: u32 = 1 << 1;
const LINK_TIMEOUT_UPDATE: u32 = 1 << 4;

/// Why an entry is not passed on as it is.
enum Refused {
    /// The errno Linux would complete it with (a bad buffer or fd).
    Errno(i32),
    /// An operation the LWK does not serve (EINVAL, what a kernel without it answers).
    Unsupported,
    /// Served by the LWK at submission (OPENAT: the open is judged like `open`): complete with
    /// this result.
    Served(i32),
    /// A variant of a served operation the LWK refuses (its words, for the one-time report):
    /// completes with EINVAL.
    Variant(&'static str),
}

/// The little-endian u32 at `off` of `e` (an entry, or io_uring_params).
pub(super) fn get32(e: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([e[off], e[off + 1], e[off + 2], e[off + 3]])
}

/// The little-endian u64 at `off` of `e`.
pub(super) fn get64(e: &[u8], off: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&e[off..off + 8]);
    u64::from_le_bytes(w)
}

fn set64(e: &mut [u8], off: usize, v: u64) {
    e[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// The name of operation `op` (IORING_OP_*), for reports.
pub(super) fn op_name(op: u8) -> &'static str {
    const NAMES: [&str; 63] = [
        "NOP",
        "READV",
        "WRITEV",
        "FSYNC",
        "READ_FIXED",
        "WRITE_FIXED",
        "POLL_ADD",
        "POLL_REMOVE",
        "SYNC_FILE_RANGE",
        "SENDMSG",
        "RECVMSG",
        "TIMEOUT",
        "TIMEOUT_REMOVE",
        "ACCEPT",
        "ASYNC_CANCEL",
        "LINK_TIMEOUT",
        "CONNECT",
        "FALLOCATE",
        "OPENAT",
        "CLOSE",
        "FILES_UPDATE",
        "STATX",
        "READ",
        "WRITE",
        "FADVISE",
        "MADVISE",
        "SEND",
        "RECV",
        "OPENAT2",
        "EPOLL_CTL",
        "SPLICE",
        "PROVIDE_BUFFERS",
        "REMOVE_BUFFERS",
        "TEE",
        "SHUTDOWN",
        "RENAMEAT",
        "UNLINKAT",
        "MKDIRAT",
        "SYMLINKAT",
        "LINKAT",
        "MSG_RING",
        "FSETXATTR",
        "SETXATTR",
        "FGETXATTR",
        "GETXATTR",
        "SOCKET",
        "URING_CMD",
        "SEND_ZC",
        "SENDMSG_ZC",
        "READ_MULTISHOT",
        "WAITID",
        "FUTEX_WAIT",
        "FUTEX_WAKE",
        "FUTEX_WAITV",
        "FIXED_FD_INSTALL",
        "FTRUNCATE",
        "BIND",
        "LISTEN",
        "RECV_ZC",
        "EPOLL_WAIT",
        "READV_FIXED",
        "WRITEV_FIXED",
        "PIPE",
    ];
    NAMES.get(op as usize).copied().unwrap_or("unknown")
}

/// Makes `e` a NOP that completes with `-errno`, keeping its user_data and link flags.
fn inject(e: &mut [u8], errno: i32) {
    complete_with(e, -errno);
}

/// Makes `e` a NOP that completes with `res`, keeping its user_data and link flags.
fn complete_with(e: &mut [u8], res: i32) {
    let (flags, user_data) = (e[FLAGS] & IOSQE_KEPT, get64(e, USER_DATA));
    e.fill(0);
    e[FLAGS] = flags;
    e[LEN..LEN + 4].copy_from_slice(&(res as u32).to_le_bytes());
    e[OP_FLAGS..OP_FLAGS + 4].copy_from_slice(&NOP_INJECT_RESULT.to_le_bytes());
    set64(e, USER_DATA, user_data);
}

impl Kernel {
    /// Checks entry `e` in place; an entry that fails becomes a NOP completing with the errno.
    /// `iov` keeps the copy of a READV/WRITEV iovec array alive for the kernel; `in_chain` says
    /// that the entry before it in this submission links to it.
    pub(super) fn vet_sqe(&self, e: &mut [u8], iov: &mut Vec<u64>, in_chain: bool) {
        match self.check_sqe(e, iov, in_chain) {
            Ok(()) => {}
            Err(Refused::Errno(n)) => inject(e, n),
            Err(Refused::Served(r)) => complete_with(e, r),
            Err(Refused::Variant(what)) => {
                let op = e[OPCODE];
                self.note_once(
                    0x3_0006_0000 | op as u64,
                    format!(
                        "io_uring {} ({op}) {what}: not served by the LWK; its completion has EINVAL",
                        op_name(op)
                    ),
                );
                inject(e, libc::EINVAL);
            }
            Err(Refused::Unsupported) => {
                let op = e[OPCODE];
                self.note_once(
                    0x3_0005_0000 | op as u64,
                    format!(
                        "io_uring operation {} ({op}) is not supported by the LWK (paths, message \
                         headers and device commands it would pass to the kernel unchecked; OPENAT \
                         is served only outside a link chain and into the fd table); its \
                         completion has EINVAL",
                        op_name(op)
                    ),
                );
                inject(e, libc::EINVAL);
            }
        }
    }

    /// A directory fd (or AT_FDCWD) and a path the guest may name, as `check.rs` judges paths.
    fn dir_and_path(&self, dirfd: i32, path: u64) -> Result<(), Refused> {
        if dirfd >= self.fd_floor {
            return Err(Refused::Errno(libc::EBADF));
        }
        let name = self
            .mem
            .read_cstr(path, 4096)
            .ok_or(Refused::Errno(libc::EFAULT))?;
        if super::check::forbidden_path(&name, self.fd_floor) {
            return Err(Refused::Errno(libc::EACCES));
        }
        Ok(())
    }

    fn check_sqe(&self, e: &mut [u8], iov: &mut Vec<u64>, in_chain: bool) -> Result<(), Refused> {
        let op = e[OPCODE];
        let flags = e[FLAGS];
        let fd = get32(e, FD) as i32;
        let (off, addr, len, op_flags) = (
            get64(e, OFF),
            get64(e, ADDR),
            get32(e, LEN) as u64,
            get32(e, OP_FLAGS),
        );
        let fd_ok = |fd: i32, fixed: bool| {
            if fixed || fd < self.fd_floor {
                Ok(())
            } else {
                Err(Refused::Errno(libc::EBADF))
            }
        };
        let file = || fd_ok(fd, flags & IOSQE_FIXED_FILE != 0);
        let buf = |a: u64, n: u64, write: bool| {
            if n == 0 || self.mem.user_can(a, n, write) {
                Ok(())
            } else {
                Err(Refused::Errno(libc::EFAULT))
            }
        };
        let selected = flags & IOSQE_BUFFER_SELECT != 0;
        // Read/write integrity attributes (attr_type_mask at 56, attr_ptr at 48): the kernel
        // copies a struct from attr_ptr and follows a pointer inside it; neither was checked
        // (VMM memory was read).
        if matches!(op, 1 | 2 | 4 | 5 | 22 | 23 | 49) && get64(e, 56) != 0 {
            return Err(Refused::Variant("with read/write attributes (attr_ptr)"));
        }
        match op {
            0 => {
                if op_flags & NOP_FILE != 0 {
                    file()?;
                }
            }
            // READV, WRITEV: the iovec array is copied and each buffer checked.
            1 | 2 => {
                file()?;
                if selected {
                    buf(addr, 16, false)?;
                } else {
                    if len > 1024 {
                        return Err(Refused::Errno(libc::EINVAL));
                    }
                    buf(addr, 16 * len, false)?;
                    let mut copy = Vec::with_capacity(2 * len as usize);
                    for k in 0..len {
                        let (b, n) = (
                            self.mem.read_u64(addr + 16 * k),
                            self.mem.read_u64(addr + 16 * k + 8),
                        );
                        buf(b, n, op == 1)?;
                        copy.extend([b, n]);
                    }
                    *iov = copy;
                    if !iov.is_empty() {
                        set64(e, ADDR, iov.as_ptr() as u64);
                    }
                }
            }
            // Operations on an fd alone (fixed buffers are checked when registered).
            3 | 4 | 5 | 6 | 8 | 17 | 24 | 34 | 49 | 55 | 57 => file()?,
            7 | 14 | 32 => {}
            // TIMEOUT, LINK_TIMEOUT: a timespec read at submission.
            11 | 15 => buf(addr, 16, false)?,
            12 => {
                if op_flags & (TIMEOUT_UPDATE | LINK_TIMEOUT_UPDATE) != 0 {
                    buf(off, 16, false)?;
                }
            }
            // ACCEPT: without the peer's address only. The kernel reads the socklen_t again when
            // a connection arrives, any time after this check: a guest set it to 0 for the check
            // and then wrote a peer's name (any bytes) at a VMM address through it.
            13 => {
                file()?;
                if addr != 0 || off != 0 {
                    return Err(Refused::Variant(
                        "asking for the peer's address (use accept(2), or none)",
                    ));
                }
            }
            // CONNECT, BIND: a sockaddr of `off` bytes.
            16 | 56 => {
                file()?;
                buf(addr, off, false)?;
            }
            // CLOSE of a fixed-file slot: no number of the fd table involved.
            19 if get32(e, SPLICE_FD_IN) != 0 => {}
            // CLOSE of a number: closed now by the LWK, under `sys::low_fds`, and completed with
            // close's result. Passed to the kernel it ran whenever the ring got to it — after a
            // linked TIMEOUT, as task work inside a VMM thread that had a temporary descriptor
            // at that number: a guest closed the VMM's copy of its mountinfo and slipped in a
            // socket of its own (issue #16). In a chain its order would matter: not served.
            19 => {
                if in_chain || flags & IOSQE_LINKS != 0 {
                    return Err(Refused::Variant(
                        "of an fd in a link chain (close(2) it, or close a fixed-file slot)",
                    ));
                }
                fd_ok(fd, false)?;
                let _low = crate::sys::low_fds();
                let r = crate::sys::raw_syscall(libc::SYS_close as u64, [fd as u32 as u64, 0, 0, 0, 0, 0]);
                return Err(Refused::Served(r as i32));
            }
            // STATX: dirfd, path, struct statx.
            21 => {
                self.dir_and_path(fd, addr)?;
                buf(off, 256, true)?;
            }
            // READ, RECV: written; WRITE, SEND, SEND_ZC: read (SEND's destination in addr2).
            22 | 27 => {
                file()?;
                if !selected {
                    buf(addr, len, true)?;
                }
            }
            23 | 26 | 47 => {
                file()?;
                // IORING_SEND_VECTORIZED (ioprio bit 5): `addr` is an iovec array whose bases
                // the kernel follows; they were not checked (a guest sent VMM memory to a socket).
                if op != 23 && u16::from_le_bytes([e[2], e[3]]) & (1 << 5) != 0 {
                    return Err(Refused::Variant("with IORING_SEND_VECTORIZED"));
                }
                buf(addr, len, false)?;
                if op != 23 && off != 0 {
                    let alen = u16::from_le_bytes([e[SPLICE_FD_IN], e[SPLICE_FD_IN + 1]]) as u64;
                    buf(off, alen, false)?;
                }
            }
            // EPOLL_CTL: epfd, the target fd in `off`, the event. The kernel takes epfd as a
            // plain fd whatever IOSQE_FIXED_FILE says: held to the floor.
            29 => {
                fd_ok(fd, false)?;
                fd_ok(off as i32, false)?;
                if addr != 0 {
                    buf(addr, 12, false)?;
                }
            }
            // SPLICE, TEE: two fds.
            30 | 33 => {
                file()?;
                fd_ok(
                    get32(e, SPLICE_FD_IN) as i32,
                    op_flags & SPLICE_F_FD_IN_FIXED != 0,
                )?;
            }
            // PROVIDE_BUFFERS: `fd` buffers of `len` bytes at addr, written later.
            31 => {
                let n = (fd.max(0) as u64)
                    .checked_mul(len)
                    .ok_or(Refused::Errno(libc::EINVAL))?;
                buf(addr, n, true)?;
            }
            // OPENAT outside a link chain, into the fd table: opened now by the LWK, judged like
            // open(2) (procfs files of a VMM refused), and completed with the fd. In a chain (its
            // order matters) or into a fixed-file slot it is not served.
            18 if !in_chain && flags & IOSQE_LINKS == 0 && get32(e, SPLICE_FD_IN) == 0 => {
                self.dir_and_path(fd, addr)?;
                let r = self.open_judged(fd, addr, op_flags as i32, len as u32);
                return Err(Refused::Served(r as i32));
            }
            // FUTEX_WAIT, FUTEX_WAKE: the futex word (its size from the futex2 flags in `fd`).
            51 | 52 => buf(addr, 1 << (fd as u32 & 3), false)?,
            _ => return Err(Refused::Unsupported),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_injected_nop_keeps_user_data_and_links() {
        let mut e = [0xffu8; 64];
        e[OPCODE] = 18; // OPENAT
        set64(&mut e, USER_DATA, 42);
        inject(&mut e, libc::EINVAL);
        assert_eq!(e[OPCODE], 0);
        assert_eq!(get64(&e, USER_DATA), 42);
        assert_eq!(get32(&e, LEN) as i32, -libc::EINVAL);
        assert_eq!(get32(&e, OP_FLAGS), NOP_INJECT_RESULT);
        assert_eq!(e[FLAGS], IOSQE_KEPT);
        assert_eq!(get64(&e, ADDR), 0);
        assert_eq!(op_name(22), "READ");
        assert_eq!(op_name(200), "unknown");
    }
}
