//! Per-thread and per-process attributes the LWK keeps for the guest (issue #16): the robust
//! futex list a thread registered with set_robust_list, its name (prctl PR_SET_NAME), and the
//! process's dumpable flag — and Linux's walk of a robust list when its thread dies
//! ([`exit_robust_list`], kernel/futex/core.c). A leaf: the system calls that use these are in
//! `syscall/robust.rs` and `syscall/prctl.rs`, the memory the walk reads is given to it
//! ([`RobustMem`]), so the walk's rules are tested here without a VM.

/// `struct robust_list_head`'s size on x86-64: the only length set_robust_list accepts.
pub const ROBUST_HEAD_LEN: u64 = 24;
/// At most this many entries of a list are walked (a long or circular list stops there).
pub const ROBUST_LIST_LIMIT: usize = 2048;
/// The futex word's bits (include/uapi/linux/futex.h).
pub const FUTEX_WAITERS: u32 = 0x8000_0000;
pub const FUTEX_OWNER_DIED: u32 = 0x4000_0000;
pub const FUTEX_TID_MASK: u32 = 0x3fff_ffff;

/// One guest thread's attributes (kept in its `ThreadInfo`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadAttrs {
    /// set_robust_list's head, with the number of execs when it was set: an exec forgets it (as
    /// Linux, which walks it and clears it at exec; the new program registers its own).
    pub robust: Option<(u64, usize)>,
    /// The name PR_SET_NAME gave (NUL-padded, at most 15 bytes), with the number of execs when
    /// it was set: after an exec the thread is named after the new program again.
    pub name: Option<([u8; 16], usize)>,
}

impl ThreadAttrs {
    /// A new thread's (clone) or a forked child's: the name is inherited (Linux copies `comm`),
    /// the robust list is not (Linux starts every new task without one).
    pub fn inherited(&self) -> Self {
        ThreadAttrs {
            robust: None,
            name: self.name,
        }
    }
}

/// The guest process's attributes that the LWK serves itself.
#[derive(Debug, Default)]
pub struct ProcessAttrs {
    /// PR_SET_DUMPABLE's value, with the number of execs when it was set (an exec makes the
    /// process dumpable again); None: dumpable (1).
    pub dumpable: std::sync::Mutex<Option<(u64, usize)>>,
}

/// What the walk needs of memory: reads that fail instead of faulting (the guest's pointers are
/// never trusted), the futex word's compare-and-exchange, and a wake of one waiter.
pub trait RobustMem {
    /// The 8 bytes at `addr`, None when they are not readable guest memory.
    fn read_u64(&self, addr: u64) -> Option<u64>;
    /// The 4-byte word at `addr`, None when it is not readable guest memory.
    fn read_u32(&self, addr: u64) -> Option<u32>;
    /// Replaces the word at `addr` with `new` if it holds `old`; returns what it held, None when
    /// it is not writable guest memory.
    fn cmpxchg_u32(&self, addr: u64, old: u32, new: u32) -> Option<u32>;
    /// FUTEX_WAKE of one waiter at `addr` (shared: the kernel uses no private flag here, so
    /// glibc waits on robust mutexes without one too).
    fn wake_one(&self, addr: u64);
}

/// An entry pointer as the list stores it: bit 0 says a PI futex.
fn entry_at(mem: &impl RobustMem, at: u64) -> Option<(u64, bool)> {
    mem.read_u64(at).map(|v| (v & !1, v & 1 != 0))
}

/// Linux's `handle_futex_death`: the word at `uaddr` of a lock held by thread `tid` that died.
/// False when the word cannot be read or written (the walk stops, as Linux's does).
fn futex_death(mem: &impl RobustMem, uaddr: u64, tid: u32, pi: bool, pending: bool) -> bool {
    if !uaddr.is_multiple_of(4) {
        return false;
    }
    loop {
        let Some(uval) = mem.read_u32(uaddr) else {
            return false;
        };
        if pending && !pi && uval == 0 {
            // The dying thread was taking the lock: a waiter may have been woken for it, so
            // another waiter must be woken in its place.
            mem.wake_one(uaddr);
            return true;
        }
        if uval & FUTEX_TID_MASK != tid {
            return true;
        }
        let mval = (uval & FUTEX_WAITERS) | FUTEX_OWNER_DIED;
        match mem.cmpxchg_u32(uaddr, uval, mval) {
            None => return false,
            Some(found) if found != uval => continue,
            Some(_) => {}
        }
        // PI futexes are woken by the kernel's PI state on Linux; the LWK has none of its own.
        if !pi && uval & FUTEX_WAITERS != 0 {
            mem.wake_one(uaddr);
        }
        return true;
    }
}

/// Linux's `exit_robust_list` for the list whose head is at `head`, of the thread whose tid is
/// `tid`: every lock on it (and the one in `list_op_pending`) that `tid` still holds gets
/// FUTEX_OWNER_DIED, keeping FUTEX_WAITERS, and one waiter is woken; at most
/// [`ROBUST_LIST_LIMIT`] entries. Returns the number of entries visited.
pub fn exit_robust_list(mem: &impl RobustMem, head: u64, tid: u32) -> usize {
    // struct robust_list_head { struct robust_list list; long futex_offset;
    //                           struct robust_list *list_op_pending; }
    let Some((mut entry, mut pi)) = entry_at(mem, head) else {
        return 0;
    };
    let Some(offset) = mem.read_u64(head.wrapping_add(8)) else {
        return 0;
    };
    let Some((pending, pending_pi)) = entry_at(mem, head.wrapping_add(16)) else {
        return 0;
    };
    let mut visited = 0;
    while entry != head {
        let next = entry_at(mem, entry);
        if entry != pending && !futex_death(mem, entry.wrapping_add(offset), tid, pi, false) {
            return visited;
        }
        visited += 1;
        let Some((n, npi)) = next else {
            return visited;
        };
        (entry, pi) = (n, npi);
        if visited >= ROBUST_LIST_LIMIT {
            break;
        }
    }
    if pending != 0 {
        futex_death(mem, pending.wrapping_add(offset), tid, pending_pi, true);
    }
    visited
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::collections::BTreeMap;

    /// Memory of 8-byte cells (u32 words live in the low half) below `limit`; wakes recorded.
    #[derive(Default)]
    struct Mem {
        cells: RefCell<BTreeMap<u64, u64>>,
        woken: RefCell<Vec<u64>>,
        limit: u64,
    }

    impl RobustMem for Mem {
        fn read_u64(&self, a: u64) -> Option<u64> {
            (a < self.limit).then(|| *self.cells.borrow().get(&a).unwrap_or(&0))
        }
        fn read_u32(&self, a: u64) -> Option<u32> {
            self.read_u64(a).map(|v| v as u32)
        }
        fn cmpxchg_u32(&self, a: u64, old: u32, new: u32) -> Option<u32> {
            let cur = self.read_u32(a)?;
            if cur == old {
                self.cells.borrow_mut().insert(a, u64::from(new));
            }
            Some(cur)
        }
        fn wake_one(&self, a: u64) {
            self.woken.borrow_mut().push(a);
        }
    }

    fn mem() -> Mem {
        Mem {
            limit: 0x10_0000,
            ..Default::default()
        }
    }

    /// A head at 0x1000 with entries at `entries` (their futex words at entry + 0x20).
    fn list(m: &Mem, entries: &[u64], pending: u64) {
        let mut c = m.cells.borrow_mut();
        let mut at = 0x1000;
        for &e in entries {
            c.insert(at, e);
            at = e;
        }
        c.insert(at, 0x1000);
        c.insert(0x1008, 0x20);
        c.insert(0x1010, pending);
    }

    #[test]
    fn held_locks_get_owner_died_and_waiters_are_woken() {
        let m = mem();
        list(&m, &[0x2000, 0x3000, 0x4000], 0);
        m.cells.borrow_mut().insert(0x2020, 77);
        m.cells.borrow_mut().insert(0x3020, u64::from(77 | FUTEX_WAITERS));
        m.cells.borrow_mut().insert(0x4020, 78); // another thread's
        assert_eq!(exit_robust_list(&m, 0x1000, 77), 3);
        assert_eq!(m.read_u32(0x2020), Some(FUTEX_OWNER_DIED));
        assert_eq!(m.read_u32(0x3020), Some(FUTEX_OWNER_DIED | FUTEX_WAITERS));
        assert_eq!(m.read_u32(0x4020), Some(78));
        assert_eq!(*m.woken.borrow(), vec![0x3020]);
    }

    #[test]
    fn the_pending_lock_is_handled_once_and_a_free_one_wakes_a_waiter() {
        let m = mem();
        list(&m, &[0x2000], 0x2000);
        m.cells.borrow_mut().insert(0x2020, 77);
        exit_robust_list(&m, 0x1000, 77);
        assert_eq!(m.read_u32(0x2020), Some(FUTEX_OWNER_DIED));
        // Pending and not yet taken (0): one waiter woken in the dying thread's place.
        let m = mem();
        list(&m, &[], 0x5000);
        exit_robust_list(&m, 0x1000, 77);
        assert_eq!(*m.woken.borrow(), vec![0x5020]);
    }

    #[test]
    fn bad_pointers_and_circular_lists_end_the_walk() {
        let m = mem();
        // An entry outside memory: nothing past it is touched, nothing faults.
        list(&m, &[0x2000, 0xdead_0000], 0);
        m.cells.borrow_mut().insert(0x2020, 77);
        assert_eq!(exit_robust_list(&m, 0x1000, 77), 1);
        assert_eq!(m.read_u32(0x2020), Some(FUTEX_OWNER_DIED));
        // A cycle that never comes back to the head stops at the limit.
        let m = mem();
        list(&m, &[0x2000, 0x3000], 0);
        m.cells.borrow_mut().insert(0x3000, 0x2000);
        assert_eq!(exit_robust_list(&m, 0x1000, 77), ROBUST_LIST_LIMIT);
        // An unreadable head: nothing.
        assert_eq!(exit_robust_list(&m, 0xdead_0000, 77), 0);
        // A misaligned word stops the walk.
        let m = mem();
        list(&m, &[0x2002], 0);
        assert_eq!(exit_robust_list(&m, 0x1000, 77), 0);
    }

    #[test]
    fn new_threads_and_children_keep_the_name_but_not_the_list() {
        let a = ThreadAttrs {
            robust: Some((0x1000, 0)),
            name: Some((*b"worker\0\0\0\0\0\0\0\0\0\0", 0)),
        };
        assert_eq!(a.inherited().robust, None);
        assert_eq!(a.inherited().name, a.name);
    }
}
