//! sched_setattr and sched_getattr (SCHED_DEADLINE, utilization clamps; `chrt -d`): per thread
//! like the other scheduling-policy calls (`cpus.rs`), so about the guest's own threads they are
//! made about the Linux thread running that vCPU. They were ENOSYS (issue #16). `struct
//! sched_attr` carries its size in its first field (u32): sched_setattr reads that many bytes
//! (48 when it is 0; E2BIG, with the kernel's size written back into the field, when it is below
//! 48 or above a page) and sched_getattr writes at most the size it is given (48 to a page).
//! The buffer is checked in the direction the kernel copies it, before the call.

use crate::kernel::{Kernel, Reply};
use libc::{EFAULT, EINVAL};

fn err(e: i32) -> Reply {
    Reply::Ret(-(e as i64))
}

/// SCHED_ATTR_SIZE_VER0: the first `struct sched_attr`, 48 bytes.
const SIZE_VER0: u64 = 48;
/// The largest size either call accepts (PAGE_SIZE).
const SIZE_MAX: u64 = 4096;

impl Kernel {
    /// sched_setattr(pid, attr, flags) and sched_getattr(pid, attr, size, flags).
    pub(super) fn sched_attr(&self, cpu: usize, nr: u64, a: [u64; 6]) -> Reply {
        let get = nr == libc::SYS_sched_getattr as u64;
        let flags = if get { a[3] } else { a[2] };
        if a[1] == 0 || (a[0] as i32) < 0 || flags != 0 {
            return err(EINVAL);
        }
        let ok = if get {
            let size = a[2];
            if !(SIZE_VER0..=SIZE_MAX).contains(&size) {
                return err(EINVAL);
            }
            self.mem.user_can(a[1], size, true)
        } else {
            let mut field = [0u8; 4];
            if self.mem.read_user(a[1], &mut field).is_err() {
                return err(EFAULT);
            }
            let size = u32::from_le_bytes(field);
            match u64::from(size) {
                0 => self.mem.user_can(a[1], SIZE_VER0, false),
                s if (SIZE_VER0..=SIZE_MAX).contains(&s) => self.mem.user_can(a[1], s, false),
                // E2BIG: the kernel writes its own size into the field.
                _ => self.mem.user_can(a[1], 4, true),
            }
        };
        if !ok {
            return err(EFAULT);
        }
        self.on_guest_thread(cpu, nr, a)
    }
}
