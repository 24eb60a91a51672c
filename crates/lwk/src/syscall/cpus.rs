//! The LWK partition's CPUs as the guest sees them: sched_getaffinity, sched_setaffinity, getcpu.
//!
//! The partition is the set of host CPUs given to the LWK (`multios lwk run --cpus`). Like
//! McKernel, the LWK places its threads itself: vCPU k runs pinned on `cpus[k % len]` (its *home*
//! CPU). A thread's affinity mask, as the guest reads it, is the whole partition — so an OpenMP
//! runtime starts one thread per LWK CPU — until the guest narrows it; then the vCPU thread is
//! pinned to the CPUs it asked for (within the partition). CPU numbers are the host's.
//! Calls about another process (a pid that is not one of the guest's threads) are performed as
//! they are, after their buffer has been checked.

use crate::kernel::{lock, Kernel, Reply};
use crate::sys;

fn err(e: i32) -> Reply {
    Reply::Ret(-(e as i64))
}

impl Kernel {
    /// vCPU `id`'s home CPU in the partition.
    pub fn home_cpu(&self, id: usize) -> Option<usize> {
        (!self.cpus.is_empty()).then(|| self.cpus[id % self.cpus.len()])
    }

    /// Records the Linux thread running vCPU `id` and pins it on its home CPU when pinning is on
    /// (otherwise new vCPU threads may run anywhere).
    pub fn vcpu_started(&self, id: usize) {
        if let Some(t) = lock(&self.threads).get_mut(id) {
            t.host_tid = sys::gettid();
        }
        // With `--reserve`, onto the reserved CPUs first (issue #14).
        if let Err(e) = crate::reserve::admit_this_thread() {
            lock(&self.notes).push(format!("vCPU {id}: {e}"));
        }
        let placed = match self.home_cpu(id) {
            Some(c) if self.pin => sys::pin_to_cpu(c),
            // vCPU 0 runs on the caller's thread: its affinity is the caller's business.
            _ if id == 0 => Ok(()),
            _ => sys::unpin(),
        };
        if let Err(e) = placed {
            lock(&self.notes).push(format!("pinning vCPU {id}: {e}"));
        }
    }

    /// The vCPU whose thread `pid` names (0: the caller), or None for another process.
    pub(super) fn vcpu_of(&self, pid: i32, cpu: usize) -> Option<usize> {
        if pid == 0 {
            return Some(cpu);
        }
        lock(&self.threads).iter().position(|t| t.alive && t.tid == pid)
    }

    /// A CPU clock that names a thread of the guest (`pthread_getcpuclockid`: the guest's tid in
    /// the clock id) names the host thread that runs it: clock_gettime, clock_getres,
    /// clock_nanosleep and timer_create with such a clock were EINVAL (the host knows no thread of
    /// that tid, issue #16). A tid that is not the guest's is EINVAL, as natively.
    #[allow(non_upper_case_globals)] // libc names the SYS_ constants in lower case
    pub(super) fn thread_clock_args(&self, cpu: usize, nr: u64, a: [u64; 6]) -> Result<[u64; 6], Reply> {
        use libc::*;
        if !matches!(
            nr as i64,
            SYS_clock_gettime | SYS_clock_getres | SYS_clock_nanosleep | SYS_timer_create
        ) {
            return Ok(a);
        }
        let id = a[0] as i32;
        let tid = match super::clockid::thread_clock_tid(id) {
            Some(t) if t != 0 => t,
            _ => return Ok(a),
        };
        let host = self
            .vcpu_of(tid, cpu)
            .map_or(0, |v| lock(&self.threads).get(v).map_or(0, |t| t.host_tid));
        if host <= 0 {
            return Err(err(EINVAL));
        }
        let mut b = a;
        b[0] = ((!host << 3) | (id & 7)) as u32 as u64;
        Ok(b)
    }

    pub(super) fn sched_getaffinity(&self, cpu: usize, a: [u64; 6]) -> Reply {
        let (pid, len, buf) = (a[0] as i32, a[1] as usize, a[2]);
        let Some(id) = self.vcpu_of(pid, cpu) else {
            return self.foreign(libc::SYS_sched_getaffinity, a, len.min(1 << 16));
        };
        // Linux's checks: room for every possible CPU (nr_cpu_ids bits), whole longs; it copies
        // out min(len, cpumask_size()) bytes and returns that count.
        if len < sys::affinity_min_len() || len % 8 != 0 {
            return err(libc::EINVAL);
        }
        let size = len.min(sys::cpumask_size());
        if !self.mem.user_can(buf, size as u64, true) {
            return err(libc::EFAULT);
        }
        let cpus = lock(&self.threads)
            .get(id)
            .and_then(|t| t.affinity.clone())
            .unwrap_or_else(|| self.cpus.clone());
        let mut mask = vec![0u8; size];
        for c in cpus.into_iter().filter(|&c| c < size * 8) {
            mask[c / 8] |= 1 << (c % 8);
        }
        if let Err(e) = self.mem.write_user(buf, &mask) {
            return Reply::Ret(e);
        }
        Reply::Ret(size as i64)
    }

    pub(super) fn sched_setaffinity(&self, cpu: usize, a: [u64; 6]) -> Reply {
        let (pid, len, buf) = (a[0] as i32, a[1] as usize, a[2]);
        let Some(id) = self.vcpu_of(pid, cpu) else {
            return self.foreign(libc::SYS_sched_setaffinity, a, len.min(1 << 16));
        };
        let len = len.min(1 << 16);
        let mut bytes = vec![0u8; len];
        if let Err(e) = self.mem.read_user(buf, &mut bytes) {
            return Reply::Ret(e);
        }
        let wanted: Vec<usize> = self
            .cpus
            .iter()
            .copied()
            .filter(|&c| bytes.get(c / 8).is_some_and(|b| b & (1 << (c % 8)) != 0))
            .collect();
        if wanted.is_empty() {
            // Linux: no CPU of the mask is allowed.
            return err(libc::EINVAL);
        }
        let host_tid = {
            let mut t = lock(&self.threads);
            let Some(t) = t.get_mut(id) else {
                return err(libc::ESRCH);
            };
            t.affinity = (wanted != self.cpus).then(|| wanted.clone());
            t.host_tid
        };
        if self.pin && host_tid != 0 {
            let target = if wanted == self.cpus {
                self.home_cpu(id).map_or(wanted, |c| vec![c])
            } else {
                wanted
            };
            if let Err(e) = sys::pin_thread(host_tid, &target) {
                return Reply::Ret(-(e.raw_os_error().unwrap_or(libc::EINVAL) as i64));
            }
        }
        Reply::Ret(0)
    }

    /// getcpu: the thread's home CPU, or the first CPU of the mask it asked for (the LWK does not
    /// track where Linux last ran a vCPU with several allowed CPUs); node 0.
    pub(super) fn getcpu(&self, cpu: usize, a: [u64; 6]) -> Reply {
        let chosen = lock(&self.threads)
            .get(cpu)
            .and_then(|t| t.affinity.as_ref().and_then(|v| v.first().copied()))
            .or_else(|| self.home_cpu(cpu))
            .unwrap_or(0);
        // As Linux: both are written where they can be, then EFAULT if either could not.
        let mut r = 0;
        for (ptr, value) in [(a[0], chosen as u32), (a[1], 0u32)] {
            if ptr != 0 {
                if let Err(e) = self.mem.write_user_u32(ptr, value) {
                    r = e;
                }
            }
        }
        Reply::Ret(r)
    }

    /// getpriority/setpriority: a nice value is per thread on Linux, so for the guest's own
    /// threads the call is made about the Linux thread running that vCPU (not the proxy that
    /// serves it); other targets (process groups, users, other processes) are passed on as is.
    pub(super) fn priority(&self, cpu: usize, nr: u64, a: [u64; 6]) -> Reply {
        let mut a = a;
        if a[0] as i32 == libc::PRIO_PROCESS as i32 {
            if let Some(id) = self.vcpu_of(a[1] as i32, cpu) {
                let host = lock(&self.threads).get(id).map_or(0, |t| t.host_tid);
                if host == 0 {
                    return err(libc::ESRCH);
                }
                a[1] = host as u64;
            }
        }
        Reply::Ret(sys::raw_syscall(nr, a))
    }

    /// The scheduling-policy calls — sched_getscheduler, sched_setscheduler, sched_getparam,
    /// sched_setparam, sched_rr_get_interval — are per thread like a nice value: about the
    /// guest's own threads they are made about the Linux thread running that vCPU (issue #14:
    /// delegated they answered for the proxy's thread, so they were ENOSYS); the buffer is
    /// checked in the direction the kernel copies it. Other processes: as asked.
    #[allow(non_upper_case_globals)] // libc names the SYS_ constants in lower case
    pub(super) fn sched_policy(&self, cpu: usize, nr: u64, a: [u64; 6]) -> Reply {
        use libc::*;
        let (buf, len, written) = match nr as i64 {
            SYS_sched_getscheduler => (0, 0, false),
            SYS_sched_setscheduler => (a[2], 4, false),
            SYS_sched_setparam => (a[1], 4, false),
            SYS_sched_getparam => (a[1], 4, true),
            SYS_sched_rr_get_interval => (a[1], 16, true),
            _ => return err(ENOSYS),
        };
        if len > 0 && !self.mem.user_can(buf, len, written) {
            return err(EFAULT);
        }
        if (a[0] as i32) < 0 {
            return err(EINVAL);
        }
        self.on_guest_thread(cpu, nr, a)
    }

    /// Call `nr` with its pid argument (`a[0]`) naming a guest thread (0: the caller) replaced
    /// by the Linux thread that runs its vCPU; ESRCH when that vCPU has no thread (any more).
    pub(super) fn on_guest_thread(&self, cpu: usize, nr: u64, a: [u64; 6]) -> Reply {
        let mut a = a;
        if let Some(id) = self.vcpu_of(a[0] as i32, cpu) {
            let host = lock(&self.threads).get(id).map_or(0, |t| t.host_tid);
            if host == 0 {
                return Reply::Ret(-(libc::ESRCH as i64));
            }
            a[0] = host as u64;
        }
        Reply::Ret(sys::raw_syscall(nr, a))
    }

    /// An affinity call about another process: performed as asked, its buffer checked first (in
    /// the direction the kernel copies it: the host would write a page the guest made read-only).
    fn foreign(&self, nr: i64, a: [u64; 6], len: usize) -> Reply {
        if !self
            .mem
            .user_can(a[2], len as u64, nr == libc::SYS_sched_getaffinity)
        {
            return err(libc::EFAULT);
        }
        Reply::Ret(sys::raw_syscall(nr as u64, a))
    }
}
