//! Robust futexes (issue #16): set_robust_list/get_robust_list are the LWK's, and the list a
//! thread registered is walked as Linux walks it (`procattr::exit_robust_list`) when the thread
//! exits and, for the threads still alive, when the process ends (exit_group, the last thread's
//! exit, a fatal signal — in a forked child too): every lock the dead thread still holds gets
//! FUTEX_OWNER_DIED and one waiter is woken, so the next locker gets EOWNERDEAD instead of
//! waiting forever.
//!
//! The guest's futex waits are delegated: the host thread serving the call waits in the host
//! kernel on the word's address, which is the VMM's own (guest memory is the VMM's memory, at the
//! same addresses). So the LWK wakes them with a host FUTEX_WAKE on that address — without the
//! private flag, as Linux's walk does (glibc waits on robust mutexes without it for this reason),
//! which also reaches a waiter in another process sharing the page (a forked child's
//! MAP_SHARED mapping is a host shared mapping).
//!
//! The owner compared is the guest's tid (the one gettid, CLONE_PARENT_SETTID and
//! set_tid_address give it, which glibc writes in a mutex it owns), not the host thread's.
//! The list's pointers are the guest's: every read goes through process_vm_readv within the
//! application window (a bad pointer ends the walk, never the VMM), and the word is changed only
//! in a mapping the guest may write.

use crate::kernel::{lock, Kernel, Reply};
use crate::procattr::{RobustMem, ROBUST_HEAD_LEN};

/// The guest's memory as the walk sees it.
struct Guest<'a>(&'a Kernel);

impl Guest<'_> {
    fn read(&self, addr: u64, buf: &mut [u8]) -> bool {
        self.0.mem.in_app(addr, buf.len() as u64) && crate::sys::read_checked(addr, buf)
    }
}

impl RobustMem for Guest<'_> {
    fn read_u64(&self, addr: u64) -> Option<u64> {
        let mut b = [0u8; 8];
        self.read(addr, &mut b).then(|| u64::from_le_bytes(b))
    }

    fn read_u32(&self, addr: u64) -> Option<u32> {
        let mut b = [0u8; 4];
        self.read(addr, &mut b).then(|| u32::from_le_bytes(b))
    }

    fn cmpxchg_u32(&self, addr: u64, old: u32, new: u32) -> Option<u32> {
        let k = self.0;
        if !addr.is_multiple_of(4) || !k.mem.in_app(addr, 4) || !k.is_mapped(addr) {
            return None;
        }
        // Ranges without an entry in the VMAs are private anonymous read-write memory.
        let writable = {
            let _mm = lock(&k.space.mm);
            lock(&k.space.vmas)
                .at(addr)
                .is_none_or(|(_, v)| v.prot & libc::PROT_WRITE != 0)
        };
        if !writable || self.read_u32(addr).is_none() {
            return None;
        }
        Some(crate::sys::cmpxchg_u32(addr, old, new))
    }

    fn wake_one(&self, addr: u64) {
        crate::sys::raw_syscall(
            libc::SYS_futex as u64,
            [addr, libc::FUTEX_WAKE as u64, 1, 0, 0, 0],
        );
    }
}

impl Kernel {
    /// set_robust_list(head, len): kept for vCPU `cpu`'s thread (Linux checks only the length).
    pub(super) fn set_robust_list(&self, cpu: usize, a: [u64; 6]) -> Reply {
        if a[1] != ROBUST_HEAD_LEN {
            return Reply::Ret(-(libc::EINVAL as i64));
        }
        let execs = self.execs();
        if let Some(t) = lock(&self.threads).get_mut(cpu) {
            t.attrs.robust = Some((a[0], execs));
        }
        Reply::Ret(0)
    }

    /// get_robust_list(tid, head_ptr, len_ptr): the head of the caller (tid 0) or of another
    /// thread of the guest; ESRCH for any other tid.
    pub(super) fn get_robust_list(&self, cpu: usize, a: [u64; 6]) -> Reply {
        let tid = a[0] as i32;
        let execs = self.execs();
        let head = {
            let threads = lock(&self.threads);
            let t = if tid == 0 {
                threads.get(cpu)
            } else {
                threads.iter().find(|t| t.alive && t.tid == tid)
            };
            match t {
                Some(t) => t.attrs.robust.filter(|r| r.1 == execs).map_or(0, |r| r.0),
                None => return Reply::Ret(-(libc::ESRCH as i64)),
            }
        };
        // Linux's two put_user: the length, then the head, each EFAULT where the guest may not write.
        let r = self
            .mem
            .write_user_u64(a[2], ROBUST_HEAD_LEN)
            .and_then(|()| self.mem.write_user_u64(a[1], head));
        Reply::Ret(r.err().unwrap_or(0))
    }

    /// Walks the robust list of vCPU `cpu`'s thread, which is exiting (and forgets it).
    pub(crate) fn exit_robust_list(&self, cpu: usize) {
        let taken = lock(&self.threads)
            .get_mut(cpu)
            .and_then(|t| t.attrs.robust.take().map(|r| (t.tid, r)));
        if let Some((tid, robust)) = taken {
            self.walk_robust(tid, robust);
        }
    }

    /// At the end of the process: walks the robust list of every thread that has one left
    /// (those still alive when exit_group, the last thread's exit or a fatal signal ended it).
    /// Memory the process shares — a MAP_SHARED mapping of a forked family, a file — outlives
    /// it, and a waiter there must see the owner died.
    pub fn exit_robust_lists(&self) {
        let lists: Vec<(i32, (u64, usize))> = lock(&self.threads)
            .iter_mut()
            .filter_map(|t| t.attrs.robust.take().map(|r| (t.tid, r)))
            .collect();
        for (tid, robust) in lists {
            self.walk_robust(tid, robust);
        }
    }

    fn walk_robust(&self, tid: i32, (head, execs): (u64, usize)) {
        // A head registered before an exec named the old program's memory.
        if execs == self.execs() && head != 0 {
            crate::procattr::exit_robust_list(&Guest(self), head, tid as u32);
        }
    }
}
