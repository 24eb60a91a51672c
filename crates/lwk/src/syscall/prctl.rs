//! prctl (issue #16). Each option is served where its state lives on Linux:
//!
//! * the guest thread's name (PR_SET_NAME/PR_GET_NAME, what pthread_setname_np and
//!   pthread_getname_np use for the calling thread) is the LWK's, per guest thread — inherited by
//!   new threads and forked children, the program's name again after an exec — and is also given
//!   to the host thread running that vCPU, so `ps -L`, `top -H` and /proc/VMM/task/TID/comm show
//!   it as they would the native thread (the VMM's main thread, proxy and signal pump keep their
//!   names; the process's name stays the VMM's);
//! * per-thread attributes the host kernel applies to what the thread does — the parent-death
//!   signal, keep-capabilities, no-new-privileges, the timer slack — are made (and read) on the
//!   host thread running the guest thread's vCPU, the one that performs its blocking calls and
//!   its forks (so a forked child's parent-death signal fires when the parent's thread exits,
//!   and reaches the guest through the VMM like any signal sent to it);
//! * process-wide attributes harmless to the VMM — child subreaper, transparent huge pages, the
//!   seccomp mode and capability bounding set (read only), Yama's ptracer — are the VMM process's
//!   own, made from whichever thread serves the call;
//! * the dumpable flag is kept by the LWK (1 again after an exec): making the VMM itself
//!   undumpable would make its /proc files root's, which the VMM reads for the guest.
//!
//! Never passed on: PR_SET_MM (it would rewrite the VMM's memory map), PR_SET_SECCOMP (a filter
//! would apply to the VMM's own calls), PR_CAPBSET_DROP and the rest: EINVAL, as a kernel without
//! the option answers.

use crate::kernel::{lock, Ctx, Kernel, Reply};
use libc::c_int;

fn err(e: i32) -> Reply {
    Reply::Ret(-(e as i64))
}

/// The host's prctl with the guest's integer arguments (no pointer is ever passed on).
fn host(op: c_int, a: [u64; 6]) -> i64 {
    crate::sys::raw_syscall(libc::SYS_prctl as u64, [op as u64, a[1], a[2], a[3], a[4], 0])
}

/// The host's prctl for a GET option that writes an int through arg2: into the VMM's own int.
fn host_get_int(op: c_int) -> Result<i32, i64> {
    let mut v: c_int = 0;
    let r = crate::sys::raw_syscall(
        libc::SYS_prctl as u64,
        [op as u64, &mut v as *mut c_int as u64, 0, 0, 0, 0],
    );
    if r < 0 {
        Err(r)
    } else {
        Ok(v)
    }
}

impl Kernel {
    pub(super) fn prctl(&self, ctx: Ctx<'_>, cpu: usize, a: [u64; 6]) -> Reply {
        let on_vcpu = matches!(ctx, Ctx::Vcpu(_));
        match a[0] as c_int {
            libc::PR_SET_NAME => self.set_name(on_vcpu, cpu, a[1]),
            // Results are written as Linux's copy_to_user/put_user would: EFAULT on a page the
            // guest may not write (issue #16: written after an `in_app` check only).
            libc::PR_GET_NAME => Reply::Ret(
                self.mem
                    .write_user(a[1], &self.thread_name(cpu))
                    .err()
                    .unwrap_or(0),
            ),
            // The calling thread's own: on its vCPU's host thread.
            libc::PR_SET_PDEATHSIG
            | libc::PR_SET_KEEPCAPS
            | libc::PR_GET_KEEPCAPS
            | libc::PR_SET_NO_NEW_PRIVS
            | libc::PR_GET_NO_NEW_PRIVS
            | libc::PR_SET_TIMERSLACK
            | libc::PR_GET_TIMERSLACK
                if !on_vcpu =>
            {
                Reply::NeedVcpu
            }
            libc::PR_GET_PDEATHSIG if !on_vcpu => Reply::NeedVcpu,
            libc::PR_SET_PDEATHSIG if a[1] > 64 => err(libc::EINVAL),
            libc::PR_SET_PDEATHSIG
            | libc::PR_SET_KEEPCAPS
            | libc::PR_GET_KEEPCAPS
            | libc::PR_SET_NO_NEW_PRIVS
            | libc::PR_GET_NO_NEW_PRIVS
            | libc::PR_SET_TIMERSLACK
            | libc::PR_GET_TIMERSLACK => Reply::Ret(host(a[0] as c_int, a)),
            libc::PR_GET_PDEATHSIG | libc::PR_GET_CHILD_SUBREAPER => {
                let v = match host_get_int(a[0] as c_int) {
                    Ok(v) => v,
                    Err(e) => return Reply::Ret(e),
                };
                Reply::Ret(self.mem.write_user(a[1], &v.to_le_bytes()).err().unwrap_or(0))
            }
            // The process's: any of the VMM's threads.
            libc::PR_SET_CHILD_SUBREAPER
            | libc::PR_GET_SECCOMP
            | libc::PR_CAPBSET_READ
            | libc::PR_GET_THP_DISABLE
            | libc::PR_SET_THP_DISABLE
            | libc::PR_SET_PTRACER => Reply::Ret(host(a[0] as c_int, a)),
            libc::PR_GET_DUMPABLE => {
                let execs = self.execs();
                let v = lock(&self.attrs.dumpable)
                    .filter(|d| d.1 == execs)
                    .map_or(1, |d| d.0);
                Reply::Ret(v as i64)
            }
            libc::PR_SET_DUMPABLE => {
                if a[1] > 1 {
                    return err(libc::EINVAL);
                }
                *lock(&self.attrs.dumpable) = Some((a[1], self.execs()));
                Reply::Ret(0)
            }
            libc::PR_GET_TID_ADDRESS => {
                let ctid = lock(&self.threads)
                    .get(cpu)
                    .and_then(|t| t.clear_child_tid)
                    .unwrap_or(0);
                Reply::Ret(self.mem.write_user_u64(a[1], ctid).err().unwrap_or(0))
            }
            _ => err(libc::EINVAL),
        }
    }

    /// PR_SET_NAME: at most 15 bytes of the string at `at` (as Linux's strncpy_from_user).
    fn set_name(&self, on_vcpu: bool, cpu: usize, at: u64) -> Reply {
        let mut name = [0u8; 16];
        for (k, b) in name.iter_mut().take(15).enumerate() {
            let p = at.wrapping_add(k as u64);
            let mut c = [0u8; 1];
            if self.mem.read_user(p, &mut c).is_err() {
                return err(libc::EFAULT);
            }
            if c[0] == 0 {
                break;
            }
            *b = c[0];
        }
        if !on_vcpu {
            // The host thread to rename is the vCPU's.
            return Reply::NeedVcpu;
        }
        let execs = self.execs();
        if let Some(t) = lock(&self.threads).get_mut(cpu) {
            t.attrs.name = Some((name, execs));
        }
        // The host thread's name, for ps and /proc (a failure changes nothing the guest sees).
        crate::sys::raw_syscall(
            libc::SYS_prctl as u64,
            [libc::PR_SET_NAME as u64, name.as_ptr() as u64, 0, 0, 0, 0],
        );
        Reply::Ret(0)
    }

    /// The name of vCPU `cpu`'s thread, NUL-padded: the one PR_SET_NAME gave it since the last
    /// exec, else the program's file name (at most 15 bytes, as Linux's `comm`).
    pub(crate) fn thread_name(&self, cpu: usize) -> [u8; 16] {
        let execs = self.execs();
        let set = lock(&self.threads)
            .get(cpu)
            .and_then(|t| t.attrs.name)
            .filter(|n| n.1 == execs);
        if let Some((name, _)) = set {
            return name;
        }
        let exe = lock(&self.program.exe).clone();
        let base = exe.rsplit(|&c| c == b'/').next().unwrap_or(&exe);
        let mut name = [0u8; 16];
        let n = base.len().min(15);
        name[..n].copy_from_slice(&base[..n]);
        name
    }
}
