//! The guest's side of the fd space (`fds.rs`): close_range clamped below the VMM's fds, and
//! RLIMIT_NOFILE as the guest sees and sets it; RLIMIT_AS and RLIMIT_DATA likewise (`memlimit.rs`);
//! another VMM's limits held from the guest's prlimit64.

use crate::kernel::{Kernel, Reply};
use crate::{fds, sys};

const CLOSE_RANGE_UNSHARE: u64 = 2;
/// The capability that lets setrlimit raise a hard limit.
const CAP_SYS_RESOURCE: u32 = 24;
const CLOSE_RANGE_CLOEXEC: u64 = 4;

fn err(e: i32) -> Reply {
    Reply::Ret(-(e as i64))
}

impl Kernel {
    /// close_range(first, last, flags), clamped below the VMM's fds. CLOSE_RANGE_CLOEXEC is
    /// honoured. CLOSE_RANGE_UNSHARE is not passed on: the VMM's threads (proxy, vCPUs) must keep
    /// sharing one fd table, so the range is closed for the whole guest process — what the flag
    /// gives a single-threaded caller, the usual one (closefrom before exec).
    pub(super) fn close_range(&self, a: [u64; 6]) -> Reply {
        let (first, last, flags) = (a[0] as u32, a[1] as u32, a[2]);
        if flags & !(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC) != 0 || first > last {
            return err(libc::EINVAL);
        }
        let top = (self.fd_floor - 1) as u32;
        if first > top {
            return Reply::Ret(0);
        }
        // Not while a VMM thread has a temporary fd in the guest's range (`sys::low_fds`).
        let _low = sys::low_fds();
        Reply::Ret(sys::raw_syscall(
            libc::SYS_close_range as u64,
            [
                first as u64,
                last.min(top) as u64,
                flags & CLOSE_RANGE_CLOEXEC,
                0,
                0,
                0,
            ],
        ))
    }

    /// getrlimit/setrlimit/prlimit64 of RLIMIT_AS for the guest itself: the guest's limit, kept
    /// and enforced by the LWK (`memlimit.rs`), never the VMM's.
    pub(super) fn address_space_limit(&self, nr: u64, a: [u64; 6]) -> Reply {
        self.guest_rlimit(nr, a, crate::memlimit::guest_limit, |s, h| {
            crate::memlimit::set_guest_limit(s, h, sys::has_capability(CAP_SYS_RESOURCE))
        })
    }

    /// getrlimit/setrlimit/prlimit64 of RLIMIT_DATA for the guest itself: the guest's limit, kept
    /// and reported by the LWK (`memlimit.rs`), never the VMM's (whose window alone exceeds a
    /// usual data limit: a guest's setrlimit made the VMM's next allocations fail).
    pub(super) fn data_limit(&self, nr: u64, a: [u64; 6]) -> Reply {
        self.guest_rlimit(nr, a, crate::memlimit::guest_data_limit, |s, h| {
            crate::memlimit::set_guest_data_limit(s, h, sys::has_capability(CAP_SYS_RESOURCE))
        })
    }

    /// prlimit64 of another process that runs a VMM (a forked guest's parent or child, another
    /// rank): setting a limit the VMM itself lives by — its memory (DATA, AS, STACK, MEMLOCK),
    /// its fds (NOFILE), its threads (NPROC), its signal queue (SIGPENDING) — is refused with
    /// EPERM: that VMM keeps its guest's DATA, AS and NOFILE itself, and lowering the process's
    /// own would make its allocations, vCPU threads or fds fail (issue #16). Reading is served
    /// (the VMM's values). True for such a call (prlimit64's arguments `a`).
    pub(super) fn sets_another_vmms_limit(&self, a: [u64; 6]) -> bool {
        let pid = a[0] as i32;
        let vmm_lives_by = matches!(
            a[1] as u32,
            libc::RLIMIT_DATA
                | libc::RLIMIT_AS
                | libc::RLIMIT_STACK
                | libc::RLIMIT_MEMLOCK
                | libc::RLIMIT_NOFILE
                | libc::RLIMIT_NPROC
                | libc::RLIMIT_SIGPENDING
        );
        a[2] != 0 && vmm_lives_by && pid > 0 && !self.is_self(pid) && crate::procfs::is_vmm(pid)
    }

    /// getrlimit/setrlimit/prlimit64 of RLIMIT_NOFILE for the guest itself: the guest's limit,
    /// kept by the LWK (`fds.rs`).
    pub(super) fn nofile(&self, nr: u64, a: [u64; 6]) -> Reply {
        self.guest_rlimit(nr, a, fds::guest_limit, fds::set_guest_limit)
    }

    /// getrlimit/setrlimit/prlimit64 (arguments `a`) of a limit the LWK keeps for the guest:
    /// `current` gives (soft, hard), `set` takes a new pair or the errno that refuses it.
    fn guest_rlimit(
        &self,
        nr: u64,
        a: [u64; 6],
        current: impl Fn() -> (u64, u64),
        set: impl Fn(u64, u64) -> Result<(), i32>,
    ) -> Reply {
        let (new, old) = match nr as i64 {
            libc::SYS_getrlimit => (0, a[1]),
            libc::SYS_setrlimit => (a[1], 0),
            _ => (a[2], a[3]),
        };
        for p in [new, old] {
            if p != 0 && !self.mem.in_app(p, 16) {
                return err(libc::EFAULT);
            }
        }
        let (soft, hard) = current();
        // As Linux: the new pair read before anything changes, the old one written after
        // (`write_user`: a read-only page is EFAULT, never a write past the guest's protections).
        if new != 0 {
            let pair = self
                .mem
                .read_user_u64(new)
                .and_then(|s| Ok((s, self.mem.read_user_u64(new + 8)?)));
            match pair {
                Ok((s, h)) => {
                    if let Err(e) = set(s, h) {
                        return err(e);
                    }
                }
                Err(e) => return Reply::Ret(e),
            }
        }
        if old != 0 {
            let w = self
                .mem
                .write_user_u64(old, soft)
                .and_then(|()| self.mem.write_user_u64(old + 8, hard));
            if let Err(e) = w {
                return Reply::Ret(e);
            }
        }
        Reply::Ret(0)
    }
}
