//! io_uring through the proxy (issue #14): the guest's rings are the kernel's, with no copy of
//! completions or data, and every submission is checked before the kernel sees it.
//!
//! * `io_uring_setup` is performed with IORING_SETUP_NO_MMAP: the VMM gives the kernel the ring
//!   memory (completion queue, submission queue indices: shared memory it owns, [`SharedRegion`])
//!   and a submission-entry array of its own that the guest never maps. (This kernel refuses
//!   MAP_FIXED mmaps of a ring fd, so the kernel's own ring pages cannot be placed at the guest's
//!   address; the guest-provided memory of NO_MMAP is the way to share them.)
//! * The guest's `mmap(ring_fd, IORING_OFF_SQ_RING | IORING_OFF_CQ_RING)` maps those same ring
//!   pages into its window (an alias of the shared memory), so it reads completions the kernel
//!   writes and publishes its submissions with no call. `IORING_OFF_SQES` maps an entry array of
//!   the guest's own.
//! * `io_uring_enter` copies the entries the guest submits from its array into the kernel's,
//!   checking each (`uring_sqe.rs`): buffers inside the window with the page protections the
//!   transfer needs, file descriptors below the VMM's range, paths as `check.rs` judges them,
//!   iovec arrays copied out of the guest's reach. An entry that fails the check, or whose
//!   operation the LWK does not serve, becomes a NOP that completes with the errno (the kernel's
//!   IORING_NOP_INJECT_RESULT) — what the program sees for a bad buffer natively — and an
//!   unsupported operation is reported once on stderr. The kernel reads entries only during
//!   io_uring_enter (SQPOLL is refused), and only from the VMM's array, which holds nothing but
//!   checked entries: another guest thread rewriting its own array meanwhile changes nothing.
//! * `io_uring_register`: buffers (iovecs checked and copied; the kernel pins guest pages), files
//!   (fds checked), eventfds, probes, personalities, restrictions; the rest is refused.

use super::uring_sqe::{get32, get64};
use crate::iouring::{Backing, Ring};
use crate::kernel::{lock, Kernel, Reply};
use crate::sys::{self, SharedRegion};
use std::sync::{Arc, Mutex};

const SETUP_SQPOLL: u32 = 1 << 1;
const SETUP_SQ_AFF: u32 = 1 << 2;
const SETUP_CQSIZE: u32 = 1 << 3;
const SETUP_CLAMP: u32 = 1 << 4;
const SETUP_ATTACH_WQ: u32 = 1 << 5;
const SETUP_SQE128: u32 = 1 << 10;
const SETUP_CQE32: u32 = 1 << 11;
const SETUP_SINGLE_ISSUER: u32 = 1 << 12;
const SETUP_DEFER_TASKRUN: u32 = 1 << 13;
const SETUP_NO_MMAP: u32 = 1 << 14;
const SETUP_REGISTERED_FD_ONLY: u32 = 1 << 15;
const SETUP_NO_SQARRAY: u32 = 1 << 16;
/// The setup flags the LWK serves: IOPOLL … HYBRID_IOPOLL but SQPOLL, SQ_AFF and
/// REGISTERED_FD_ONLY.
const SETUP_SERVED: u32 = ((1 << 18) - 1) & !(SETUP_SQPOLL | SETUP_SQ_AFF | SETUP_REGISTERED_FD_ONLY);

const ENTER_GETEVENTS: u64 = 1 << 0;
const ENTER_EXT_ARG: u64 = 1 << 3;
const ENTER_REGISTERED_RING: u64 = 1 << 4;

/// mmap offsets of a ring fd.
const OFF_SQ_RING: u64 = 0;
const OFF_CQ_RING: u64 = 0x800_0000;
const OFF_SQES: u64 = 0x1000_0000;

/// struct io_uring_params: sq_off at 40, cq_off at 80, 120 bytes in all.
const PARAMS: usize = 120;
const SQ_OFF: usize = 40;
const CQ_OFF: usize = 80;

fn errno(e: i32) -> Reply {
    Reply::Ret(-(e as i64))
}

fn io_errno(e: &std::io::Error) -> Reply {
    errno(e.raw_os_error().unwrap_or(libc::ENOMEM))
}

/// The SQ and CQ sizes the kernel will choose for `entries` (io_uring_setup's rules), to size the
/// memory given to it; the kernel's answer is checked against them after the call.
fn ring_sizes(entries: u32, flags: u32, cq_asked: u32) -> Result<(u64, u64), i32> {
    const MAX_SQ: u32 = 32768;
    const MAX_CQ: u32 = 2 * MAX_SQ;
    let clamp = |n: u32, max: u32| match n {
        0 => Err(libc::EINVAL),
        n if n > max && flags & SETUP_CLAMP == 0 => Err(libc::EINVAL),
        n => Ok(n.min(max).next_power_of_two()),
    };
    let sq = clamp(entries, MAX_SQ)?;
    let cq = if flags & SETUP_CQSIZE != 0 {
        clamp(cq_asked, MAX_CQ)?.max(sq)
    } else {
        2 * sq
    };
    Ok((sq as u64, cq as u64))
}

impl Kernel {
    /// The ring behind guest fd `fd`, if it is one the LWK set up.
    pub(super) fn ring_of(&self, fd: i32) -> Option<Arc<Ring>> {
        if fd < 0 || fd >= self.fd_floor {
            return None;
        }
        let id = sys::fd_file_id(fd).ok()?;
        lock(&self.space.uring).get(&id).cloned()
    }

    /// True when call `nr` is about a ring whose submissions must come from one task (or is the
    /// setup of one): served on the calling guest thread's own vCPU thread, as the kernel requires.
    pub(super) fn uring_wants_vcpu(&self, nr: u64, a: &[u64; 6]) -> bool {
        match nr as i64 {
            libc::SYS_io_uring_setup => {
                self.mem.in_app(a[1], PARAMS as u64)
                    && self.mem.read_u64(a[1] + 8) as u32 & (SETUP_SINGLE_ISSUER | SETUP_DEFER_TASKRUN) != 0
            }
            libc::SYS_io_uring_enter | libc::SYS_io_uring_register => {
                self.ring_of(a[0] as i32).is_some_and(|r| r.single_issuer)
            }
            _ => false,
        }
    }

    /// io_uring_setup(entries, params).
    pub(super) fn io_uring_setup(&self, a: [u64; 6]) -> Reply {
        let (entries, p) = (a[0] as u32, a[1]);
        if !self.mem.user_can(p, PARAMS as u64, true) {
            return errno(libc::EFAULT);
        }
        let mut guest = [0u8; PARAMS];
        self.mem.read(p, &mut guest);
        let flags = get32(&guest, 8);
        if flags & !SETUP_SERVED != 0 {
            self.note_once(
                0x3_0001_0000,
                format!(
                    "io_uring_setup: flags {:#x} are not supported by the LWK (SQPOLL would have a \
                     kernel thread read submissions the LWK cannot check; REGISTERED_FD_ONLY \
                     leaves no fd); returning EINVAL",
                    flags & !SETUP_SERVED
                ),
            );
            return errno(libc::EINVAL);
        }
        if flags & SETUP_ATTACH_WQ != 0 && get32(&guest, 24) as i32 >= self.fd_floor {
            return errno(libc::EBADF);
        }
        let (sq, cq) = match ring_sizes(entries, flags, get32(&guest, 4)) {
            Ok(v) => v,
            Err(e) => return errno(e),
        };
        let sqe_size: u64 = if flags & SETUP_SQE128 != 0 { 128 } else { 64 };
        let cqe_size: u64 = if flags & SETUP_CQE32 != 0 { 32 } else { 16 };
        // struct io_rings (< 256 bytes), the CQEs, then the SQ index array.
        let rings_len = (256 + cq * cqe_size + 64 + sq * 4).div_ceil(4096) * 4096;
        let sqes_len = (sq * sqe_size).div_ceil(4096) * 4096;
        let (rings, guest_sqes) = if flags & SETUP_NO_MMAP != 0 {
            let (r, s) = (get64(&guest, CQ_OFF + 32), get64(&guest, SQ_OFF + 32));
            // Inside the window (the kernel pins what it needs of it; the LWK's sizes are upper
            // bounds, checked against the kernel's after the call).
            if !self.mem.in_app(r, rings_len) || !self.mem.in_app(s, sqes_len) {
                return errno(libc::EFAULT);
            }
            (Backing::Guest(r), Backing::Guest(s))
        } else {
            match (
                SharedRegion::new(rings_len as usize),
                SharedRegion::new(sqes_len as usize),
            ) {
                (Ok(r), Ok(s)) => (Backing::Vmm(r), Backing::Vmm(s)),
                (Err(e), _) | (_, Err(e)) => return io_errno(&e),
            }
        };
        let kernel_sqes = match SharedRegion::new(sqes_len as usize) {
            Ok(r) => r,
            Err(e) => return io_errno(&e),
        };
        let rings_addr = match &rings {
            Backing::Vmm(r) => r.addr(),
            Backing::Guest(a) => *a,
        };
        let mut kp = guest;
        kp[8..12].copy_from_slice(&(flags | SETUP_NO_MMAP).to_le_bytes());
        kp[CQ_OFF + 32..CQ_OFF + 40].copy_from_slice(&rings_addr.to_le_bytes());
        kp[SQ_OFF + 32..SQ_OFF + 40].copy_from_slice(&kernel_sqes.addr().to_le_bytes());
        let fd = sys::raw_syscall(
            libc::SYS_io_uring_setup as u64,
            [entries as u64, kp.as_mut_ptr() as u64, 0, 0, 0, 0],
        );
        if fd < 0 {
            return Reply::Ret(fd);
        }
        let fd = self.limit_fd(fd);
        if fd < 0 {
            return Reply::Ret(fd);
        }
        let (ksq, kcq) = (get32(&kp, 0) as u64, get32(&kp, 4) as u64);
        let array = get32(&kp, SQ_OFF + 24) as u64;
        let cqes = get32(&kp, CQ_OFF + 20) as u64;
        let needed = (cqes + kcq * cqe_size).max(if flags & SETUP_NO_SQARRAY != 0 {
            0
        } else {
            array + ksq * 4
        });
        if needed > rings_len || ksq * sqe_size > sqes_len {
            sys::close(fd as i32);
            self.note(format!(
                "io_uring_setup: the kernel's rings need {needed} bytes, more than the {rings_len} \
                 the LWK sized for {entries} entries; returning ENOMEM"
            ));
            return errno(libc::ENOMEM);
        }
        // The guest sees the kernel's answer with its own flags and addresses.
        let mut back = kp;
        back[8..12].copy_from_slice(&flags.to_le_bytes());
        back[CQ_OFF + 32..CQ_OFF + 40].copy_from_slice(&guest[CQ_OFF + 32..CQ_OFF + 40]);
        back[SQ_OFF + 32..SQ_OFF + 40].copy_from_slice(&guest[SQ_OFF + 32..SQ_OFF + 40]);
        self.mem.write(p, &back);
        let ring = Ring {
            fd: fd as i32,
            rings,
            guest_sqes,
            kernel_sqes,
            sqe_size: sqe_size as usize,
            sq_entries: ksq as u32,
            sq_head: get32(&kp, SQ_OFF) as u64,
            sq_tail: get32(&kp, SQ_OFF + 4) as u64,
            sq_array: (flags & SETUP_NO_SQARRAY == 0).then_some(array),
            single_issuer: flags & (SETUP_SINGLE_ISSUER | SETUP_DEFER_TASKRUN) != 0,
            slots: Mutex::new(vec![Vec::new(); ksq as usize]),
        };
        let Ok(id) = sys::fd_file_id(fd as i32) else {
            sys::close(fd as i32);
            return errno(libc::EIO);
        };
        let mut table = lock(&self.space.uring);
        if table.len() >= 64 {
            // Rings whose setup fd now names something else are most likely closed: forget them
            // (a ring only reachable through a dup of its first fd is forgotten too).
            table.retain(|k, r| sys::fd_file_id(r.fd).ok() == Some(*k));
        }
        table.insert(id, Arc::new(ring));
        Reply::Ret(fd)
    }

    /// mmap of an io_uring fd (MAP_SHARED): the ring memory or the guest's entry array, aliased
    /// into the window. None when `fd` is not a ring the LWK set up.
    pub(super) fn mmap_kernel_object(&self, a: [u64; 6]) -> Option<Reply> {
        let (addr, len, prot, flags, fd, off) = (a[0], a[1], a[2] as i32, a[3] as i32, a[4] as i32, a[5]);
        let ring = self.ring_of(fd)?;
        let backing = match off {
            OFF_SQ_RING | OFF_CQ_RING => &ring.rings,
            OFF_SQES => &ring.guest_sqes,
            _ => {
                self.note_once(
                    0x3_0002_0000,
                    format!(
                        "mmap of an io_uring fd at offset {off:#x} (a provided-buffer ring or a \
                         region) is not supported by the LWK: the kernel would read buffer \
                         addresses the LWK cannot check; returning EINVAL"
                    ),
                );
                return Some(errno(libc::EINVAL));
            }
        };
        // With the guest's own NO_MMAP there is nothing to map: ENOMEM, as this kernel answers.
        let Backing::Vmm(region) = backing else {
            return Some(errno(libc::ENOMEM));
        };
        let len = len.div_ceil(4096) * 4096;
        if len == 0 || len > region.len() as u64 {
            return Some(errno(libc::EINVAL));
        }
        let fixed = flags & (libc::MAP_FIXED | libc::MAP_FIXED_NOREPLACE) != 0;
        let mut fx = crate::mm::Effects::default();
        let got = {
            let mut mm = lock(&self.space.mm);
            if flags & libc::MAP_FIXED_NOREPLACE != 0 && !mm.maps.is_free(addr, addr.saturating_add(len)) {
                return Some(errno(libc::EEXIST));
            }
            mm.mmap(addr, len, fixed, &mut fx)
        };
        let got = match got {
            Ok(v) => v,
            Err(e) => return Some(Reply::Ret(e.errno())),
        };
        if let Err(e) = self.unshare(got, len) {
            return Some(Reply::Ret(e));
        }
        self.apply(fx);
        if let Err(e) = region.alias_into(got, len) {
            self.release(got, len).ok();
            return Some(io_errno(&e));
        }
        lock(&self.space.shared).insert(got, got + len);
        self.note_map(got, len, prot, true, Some(fd), off);
        self.sync_protections(got, got + len);
        Some(Reply::Ret(got as i64))
    }

    /// io_uring_enter(fd, to_submit, min_complete, flags, arg, argsz).
    pub(super) fn io_uring_enter(&self, a: [u64; 6]) -> Reply {
        let (fd, to_submit, min_complete, flags) = (a[0] as i32, a[1] as u32, a[2], a[3]);
        if flags & ENTER_REGISTERED_RING != 0 {
            // Registered ring fds are refused at registration: there is none to name.
            return errno(libc::EINVAL);
        }
        if fd < 0 || fd >= self.fd_floor {
            return errno(libc::EBADF);
        }
        let Some(ring) = self.ring_of(fd) else {
            if crate::procfs::fd_path(fd).is_some_and(|p| p.contains("io_uring")) {
                self.note_once(
                    0x3_0003_0000,
                    "io_uring_enter on a ring the LWK did not set up (received from another \
                     process?): its submissions cannot be checked; returning EOPNOTSUPP"
                        .into(),
                );
            }
            return errno(libc::EOPNOTSUPP);
        };
        // The wait argument, copied out of the guest's reach. A signal mask given here is not
        // installed: the LWK keeps the guest's masks itself (docs/LWK.md, io_uring).
        let mut ext = [0u64; 3];
        let ts: [u64; 2]; // lives until the calls below have read it
        let (mut argp, mut argsz) = (0u64, 0u64);
        if flags & ENTER_EXT_ARG != 0 && a[4] != 0 {
            if a[5] != 24 {
                return errno(libc::EINVAL);
            }
            if !self.mem.in_app(a[4], 24) {
                return errno(libc::EFAULT);
            }
            let t = self.mem.read_u64(a[4] + 16);
            if t != 0 {
                if !self.mem.in_app(t, 16) {
                    return errno(libc::EFAULT);
                }
                ts = [self.mem.read_u64(t), self.mem.read_u64(t + 8)];
                ext[2] = ts.as_ptr() as u64;
            }
            // min_wait_usec (the upper half of the second word) is kept; the mask is not.
            ext[1] = self.mem.read_u64(a[4] + 8) & 0xffff_ffff_0000_0000;
            argp = ext.as_ptr() as u64;
            argsz = 24;
        }
        let enter = |n: u32, min: u64, f: u64| {
            let (p, s) = if f & ENTER_EXT_ARG != 0 {
                (argp, argsz)
            } else {
                (0, 0)
            };
            sys::raw_syscall(
                libc::SYS_io_uring_enter as u64,
                [fd as u64, n as u64, min, f, p, s],
            )
        };
        let waits = flags & ENTER_GETEVENTS != 0 && min_complete > 0;
        let alone = self.live_threads.load(std::sync::atomic::Ordering::Acquire) <= 1;
        if to_submit == 0 {
            return Reply::Ret(enter(0, min_complete, flags));
        }
        let mut slots = lock(&ring.slots);
        let n = self.copy_submissions(&ring, &mut slots, to_submit);
        if !waits || alone {
            // Submit and wait in one call, as the guest asked (no other thread can need the
            // submission lock meanwhile, or there is no wait).
            let r = enter(n, min_complete, flags);
            drop(slots);
            return Reply::Ret(r);
        }
        // Several threads: submit under the lock, then wait without it.
        let r = enter(n, 0, flags & !(ENTER_GETEVENTS | ENTER_EXT_ARG));
        drop(slots);
        if r < 0 {
            return Reply::Ret(r);
        }
        let w = enter(0, min_complete, flags);
        Reply::Ret(if r > 0 || w >= 0 { r } else { w })
    }

    /// Copies the entries the guest submits (at most `to_submit`, from the kernel's SQ head to
    /// the guest's tail) from its array into the kernel's, checked; returns how many to submit.
    fn copy_submissions(&self, ring: &Ring, slots: &mut [Vec<u64>], to_submit: u32) -> u32 {
        let head = ring.rings.u32_at(&self.mem, ring.sq_head);
        let tail = ring.rings.u32_at(&self.mem, ring.sq_tail);
        let mask = ring.sq_entries - 1;
        let n = to_submit.min(tail.wrapping_sub(head)).min(ring.sq_entries);
        let mut sqe = [0u8; 128];
        let mut in_chain = false;
        for i in 0..n {
            let pos = head.wrapping_add(i) & mask;
            let idx = match ring.sq_array {
                Some(off) => ring.rings.u32_at(&self.mem, off + 4 * pos as u64),
                None => pos,
            };
            if idx >= ring.sq_entries {
                continue; // the kernel drops it too
            }
            let e = &mut sqe[..ring.sqe_size];
            let at = idx as u64 * ring.sqe_size as u64;
            ring.guest_sqes.read(&self.mem, at, e);
            let links = e[1] & super::uring_sqe::IOSQE_LINKS != 0;
            self.vet_sqe(e, &mut slots[idx as usize], in_chain);
            in_chain = links;
            ring.kernel_sqes.write(at as usize, e);
        }
        n
    }

    /// io_uring_register(fd, opcode, arg, nr_args).
    pub(super) fn io_uring_register(&self, a: [u64; 6]) -> Reply {
        let (fd, op, arg, nr) = (a[0] as i32, a[1] as u32, a[2], a[3]);
        if fd < 0 || fd >= self.fd_floor {
            return errno(libc::EBADF);
        }
        if self.ring_of(fd).is_none() {
            return errno(libc::EOPNOTSUPP);
        }
        let call = |arg: u64| {
            Reply::Ret(sys::raw_syscall(
                libc::SYS_io_uring_register as u64,
                [fd as u64, op as u64, arg, nr, 0, 0],
            ))
        };
        match op {
            // REGISTER_BUFFERS: an iovec array; the kernel pins the pages, which must be
            // writable guest memory.
            0 => {
                if nr > 16384 || !self.mem.in_app(arg, nr * 16) {
                    return errno(if nr > 16384 { libc::EINVAL } else { libc::EFAULT });
                }
                let mut iov = Vec::with_capacity(2 * nr as usize);
                for k in 0..nr {
                    let (base, len) = (
                        self.mem.read_u64(arg + 16 * k),
                        self.mem.read_u64(arg + 16 * k + 8),
                    );
                    if base != 0 && !self.mem.user_can(base, len, true) {
                        return errno(libc::EFAULT);
                    }
                    iov.extend([base, len]);
                }
                call(iov.as_ptr() as u64)
            }
            // REGISTER_FILES: an int array (-1: an empty slot); REGISTER_EVENTFD(_ASYNC): one int.
            2 | 4 | 7 => {
                let count = if op == 2 { nr } else { 1 };
                match self.guest_fds(arg, count) {
                    // Under `sys::low_fds`: a number the guest names may otherwise hold a VMM
                    // descriptor on its way above the floor, which the ring would keep (issue #16).
                    Ok(fds) => {
                        let _low = sys::low_fds();
                        call(fds.as_ptr() as u64)
                    }
                    Err(e) => errno(e),
                }
            }
            // REGISTER_FILES_UPDATE: { u32 offset; u32 resv; u64 fds; } and nr fds.
            6 => {
                if !self.mem.in_app(arg, 16) {
                    return errno(libc::EFAULT);
                }
                let mut up = [self.mem.read_u64(arg), self.mem.read_u64(arg + 8)];
                let fds = match self.guest_fds(up[1], nr) {
                    Ok(f) => f,
                    Err(e) => return errno(e),
                };
                up[1] = fds.as_ptr() as u64;
                let _low = sys::low_fds();
                call(up.as_ptr() as u64)
            }
            // No argument: UNREGISTER_BUFFERS/FILES/EVENTFD, PERSONALITY (the kernel refuses a
            // non-NULL arg without reading it), ENABLE_RINGS, UNREGISTER_IOWQ_AFF.
            1 | 3 | 5 | 9 | 10 | 12 | 18 => call(arg),
            // REGISTER_PROBE (written: 16 + 8 per op), RESTRICTIONS (16 each, read), IOWQ_AFF
            // (a cpumask of nr bytes), IOWQ_MAX_WORKERS (u32[2], read and written).
            8 | 11 | 17 | 19 => {
                let (len, write) = match op {
                    8 => (16 + 8 * nr.min(256), true),
                    11 => (16 * nr, false),
                    17 => (nr, false),
                    _ => (8, true),
                };
                if !self.mem.user_can(arg, len, write) {
                    return errno(libc::EFAULT);
                }
                call(arg)
            }
            _ => {
                self.note_once(
                    0x3_0004_0000 | op as u64,
                    format!(
                        "io_uring_register opcode {op} is not supported by the LWK (ring fds, \
                         buffer rings, tagged resources and other registrations hand the kernel \
                         guest pointers it would use later, unchecked); returning EINVAL"
                    ),
                );
                errno(libc::EINVAL)
            }
        }
    }

    /// `n` ints at `arg` read into VMM memory; each an fd below the VMM's range or -1.
    fn guest_fds(&self, arg: u64, n: u64) -> Result<Vec<i32>, i32> {
        if n > 1 << 20 || !self.mem.in_app(arg, 4 * n) {
            return Err(if n > 1 << 20 { libc::EINVAL } else { libc::EFAULT });
        }
        let mut out = Vec::with_capacity(n as usize);
        for k in 0..n {
            let mut b = [0u8; 4];
            self.mem.read(arg + 4 * k, &mut b);
            let fd = i32::from_le_bytes(b);
            if fd >= self.fd_floor {
                return Err(libc::EBADF);
            }
            out.push(fd);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_sizes_follow_io_uring_setup() {
        assert_eq!(ring_sizes(8, 0, 0), Ok((8, 16)));
        assert_eq!(ring_sizes(5, 0, 0), Ok((8, 16)));
        assert_eq!(ring_sizes(0, 0, 0), Err(libc::EINVAL));
        assert_eq!(ring_sizes(40000, 0, 0), Err(libc::EINVAL));
        assert_eq!(ring_sizes(40000, SETUP_CLAMP, 0), Ok((32768, 65536)));
        assert_eq!(ring_sizes(4, SETUP_CQSIZE, 100), Ok((4, 128)));
        assert_eq!(ring_sizes(4, SETUP_CQSIZE, 0), Err(libc::EINVAL));
    }
}
