//! sysinfo(2) as the partition sees it. McKernel answers it from its own memory, and so does this
//! LWK: the RAM is the application window (`lwk run --mem-mib`), free is what no mapping, image,
//! stack or break of the guest holds, and there is no swap. Uptime, loads and the process count
//! are the host's. Runtimes size themselves from it (glibc's `sysconf(_SC_PHYS_PAGES)` reads it):
//! the JVM reserves a quarter of the RAM for its heap, which with the host's 24 GiB did not fit a
//! 4 GiB window ("Could not reserve enough space for 6172672KB object heap").

use crate::kernel::{lock, Kernel, Reply};
use crate::sys;

/// Offsets in x86_64's `struct sysinfo` (112 bytes).
const TOTALRAM: u64 = 32;
const FREERAM: u64 = 40;
const SHAREDRAM: u64 = 48;
const BUFFERRAM: u64 = 56;
const TOTALSWAP: u64 = 64;
const FREESWAP: u64 = 72;
const TOTALHIGH: u64 = 88;
const FREEHIGH: u64 = 96;
const MEM_UNIT: u64 = 104;
const SIZE: u64 = 112;

impl Kernel {
    pub(super) fn sysinfo(&self, a: [u64; 6]) -> Reply {
        let buf = a[0];
        if !self.mem.user_can(buf, SIZE, true) {
            return Reply::Ret(-(libc::EFAULT as i64));
        }
        let r = sys::raw_syscall(libc::SYS_sysinfo as u64, a);
        if r < 0 {
            return Reply::Ret(r);
        }
        let (total, free) = lock(&self.space.mm).usage();
        for (off, v) in [
            (TOTALRAM, total),
            (FREERAM, free),
            (SHAREDRAM, 0),
            (BUFFERRAM, 0),
            (TOTALSWAP, 0),
            (FREESWAP, 0),
            (TOTALHIGH, 0),
            (FREEHIGH, 0),
        ] {
            self.mem.write_u64(buf + off, v);
        }
        self.mem.write(buf + MEM_UNIT, &1u32.to_le_bytes());
        Reply::Ret(0)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn offsets_match_libc() {
        let s = std::mem::MaybeUninit::<libc::sysinfo>::uninit();
        let base = s.as_ptr() as usize;
        // SAFETY: only field addresses are taken (addr_of!), nothing is read.
        let off = |p: *const u8| p as usize - base;
        // SAFETY: addr_of! on fields of an uninitialized struct computes addresses without reads.
        unsafe {
            let p = s.as_ptr();
            assert_eq!(
                off(std::ptr::addr_of!((*p).totalram).cast()),
                super::TOTALRAM as usize
            );
            assert_eq!(
                off(std::ptr::addr_of!((*p).freeram).cast()),
                super::FREERAM as usize
            );
            assert_eq!(
                off(std::ptr::addr_of!((*p).sharedram).cast()),
                super::SHAREDRAM as usize
            );
            assert_eq!(
                off(std::ptr::addr_of!((*p).bufferram).cast()),
                super::BUFFERRAM as usize
            );
            assert_eq!(
                off(std::ptr::addr_of!((*p).totalswap).cast()),
                super::TOTALSWAP as usize
            );
            assert_eq!(
                off(std::ptr::addr_of!((*p).freeswap).cast()),
                super::FREESWAP as usize
            );
            assert_eq!(
                off(std::ptr::addr_of!((*p).totalhigh).cast()),
                super::TOTALHIGH as usize
            );
            assert_eq!(
                off(std::ptr::addr_of!((*p).freehigh).cast()),
                super::FREEHIGH as usize
            );
            assert_eq!(
                off(std::ptr::addr_of!((*p).mem_unit).cast()),
                super::MEM_UNIT as usize
            );
        }
        assert_eq!(std::mem::size_of::<libc::sysinfo>(), super::SIZE as usize);
    }
}
