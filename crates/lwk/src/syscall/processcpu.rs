//! The guest process's CPU time (issue #16): CLOCK_PROCESS_CPUTIME_ID and the process CPU clocks
//! of its own pid (0 or the guest's: `clock_getcpuclockid`), getrusage(RUSAGE_SELF) and times()
//! answer the guest's vCPU threads' time (`guestcpu.rs`), not the whole VMM's. The rest of
//! getrusage's fields and times()'s children's times are the host's (LWK.md says what they count).

use crate::guestcpu::{PROF, SCHED, VIRT};
use crate::kernel::{Kernel, Reply};
use crate::sys;

/// Linux's USER_HZ on x86-64: times() counts in hundredths of a second.
const USER_HZ: u64 = 100;

fn err(e: i32) -> Reply {
    Reply::Ret(-(e as i64))
}

impl Kernel {
    /// Serves the call when it asks for the guest process's CPU time; None otherwise.
    pub(super) fn process_cpu_call(&self, nr: u64, a: &[u64; 6]) -> Option<Reply> {
        match nr as i64 {
            libc::SYS_clock_gettime => {
                let kind = self.own_process_clock(a[0] as i32)?;
                Some(self.process_clock(kind, a[1]))
            }
            libc::SYS_getrusage if a[0] as i32 == libc::RUSAGE_SELF => Some(self.rusage_self(a[1])),
            libc::SYS_times => Some(self.times(a[0])),
            _ => None,
        }
    }

    /// The kind of a process CPU clock that names the guest itself (the kernel's
    /// MAKE_PROCESS_CPUCLOCK: `~pid << 3`, no per-thread bit, a kind 0–2; pid 0 is the caller's).
    fn own_process_clock(&self, id: i32) -> Option<i32> {
        if id == libc::CLOCK_PROCESS_CPUTIME_ID {
            return Some(SCHED);
        }
        let pid = (id < 0 && id & 3 != 3 && id & 4 == 0).then_some(!(id >> 3))?;
        (pid == 0 || pid == self.pid()).then_some(id & 3)
    }

    fn process_clock(&self, kind: i32, buf: u64) -> Reply {
        let t = self.guest_cpu.total();
        let ns = match kind {
            PROF => t.user + t.system,
            VIRT => t.user,
            _ => t.run,
        };
        let mut ts = [0u8; 16];
        ts[..8].copy_from_slice(&(ns / 1_000_000_000).to_le_bytes());
        ts[8..].copy_from_slice(&(ns % 1_000_000_000).to_le_bytes());
        match self.mem.write_user(buf, &ts) {
            Ok(()) => Reply::Ret(0),
            Err(e) => Reply::Ret(e),
        }
    }

    /// getrusage(RUSAGE_SELF): the guest's user and system times, the VMM's other fields.
    fn rusage_self(&self, buf: u64) -> Reply {
        let ru = match sys::rusage_self() {
            Ok(ru) => ru,
            Err(e) => return err(e.raw_os_error().unwrap_or(libc::EINVAL)),
        };
        let (user, system) = self.guest_cpu.user_system();
        let us = |ns: u64| [(ns / 1_000_000_000) as i64, (ns % 1_000_000_000 / 1000) as i64];
        // The kernel's struct rusage on x86-64: two timevals, then fourteen longs.
        let longs = [
            ru.ru_maxrss,
            ru.ru_ixrss,
            ru.ru_idrss,
            ru.ru_isrss,
            ru.ru_minflt,
            ru.ru_majflt,
            ru.ru_nswap,
            ru.ru_inblock,
            ru.ru_oublock,
            ru.ru_msgsnd,
            ru.ru_msgrcv,
            ru.ru_nsignals,
            ru.ru_nvcsw,
            ru.ru_nivcsw,
        ];
        let bytes: Vec<u8> = us(user)
            .into_iter()
            .chain(us(system))
            .chain(longs)
            .flat_map(i64::to_le_bytes)
            .collect();
        match self.mem.write_user(buf, &bytes) {
            Ok(()) => Reply::Ret(0),
            Err(e) => Reply::Ret(e),
        }
    }

    /// times(): the guest's user and system times, the host's children's times and return value.
    fn times(&self, buf: u64) -> Reply {
        let (ret, t) = sys::times();
        if buf != 0 {
            let (user, system) = self.guest_cpu.user_system();
            let tick = 1_000_000_000 / USER_HZ;
            let words = [
                (user / tick) as i64,
                (system / tick) as i64,
                t.tms_cutime,
                t.tms_cstime,
            ];
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            if let Err(e) = self.mem.write_user(buf, &bytes) {
                return Reply::Ret(e);
            }
        }
        Reply::Ret(ret)
    }
}
