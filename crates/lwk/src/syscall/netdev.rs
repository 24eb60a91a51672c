//! The network-interface ioctls whose argument holds a pointer (issue #15): SIOCGIFCONF and
//! SIOCETHTOOL's reading commands.
//!
//! `struct ifconf { int ifc_len; char *ifc_buf; }` (16 bytes): the kernel writes up to `ifc_len`
//! bytes of `struct ifreq` at `ifc_buf` and the length it used into `ifc_len`; with a NULL
//! `ifc_buf` only the length needed. Open MPI's and PMIx's interface lists (`opal_ifinit`,
//! `pmix_ifinit`) start with it: without it a singleton MPI start-up finds no interface, and the
//! daemon it forks cannot open its PMIx listener. The struct is copied into the VMM, its buffer
//! checked, and the kernel given the copy, so another guest thread cannot swap the checked
//! pointer for a VMM address between the check and the call.
//!
//! SIOCETHTOOL (`struct ifreq` whose `ifr_data` points at a command struct) is how Open MPI reads
//! a link's speed (`opal_ethtool_get_speed`); the reading commands with a fixed size are served,
//! the command copied with the ifreq (so it cannot turn into a setting command after the check),
//! any other command gets EOPNOTSUPP (what a driver without it answers).

use super::check::EFAULT;
use crate::kernel::{Kernel, Reply};
use crate::sys;

/// SIOCGIFCONF's request number.
pub const SIOCGIFCONF: u64 = 0x8912;

/// SIOCETHTOOL's request number.
pub const SIOCETHTOOL: u64 = 0x8946;

/// `sizeof(struct ifreq)` on x86-64; `ifr_data` is at offset 16.
const IFREQ_LEN: usize = 40;

/// The size of the struct a reading ethtool command fills, or None for a command not served:
/// ETHTOOL_GSET (`struct ethtool_cmd`), ETHTOOL_GDRVINFO (`struct ethtool_drvinfo`),
/// ETHTOOL_GLINK (`struct ethtool_value`).
fn ethtool_len(cmd: u32) -> Option<usize> {
    match cmd {
        0x1 => Some(44),
        0x3 => Some(196),
        0xa => Some(8),
        _ => None,
    }
}

/// `sizeof(struct ifconf)` on x86-64 (int, padding, pointer).
const IFCONF_LEN: u64 = 16;

impl Kernel {
    /// Serves `ioctl(fd, SIOCGIFCONF, ifc)`; `fd` has been checked by the caller.
    pub(super) fn ifconf(&self, fd: u64, ifc: u64) -> Reply {
        if !self.mem.user_can(ifc, IFCONF_LEN, true) {
            return Reply::Ret(EFAULT);
        }
        let mut copy = [self.mem.read_u64(ifc), self.mem.read_u64(ifc + 8)];
        let len = copy[0] as u32 as i32;
        let buf = copy[1];
        // A negative length makes the kernel write no entry (as a too short one does).
        if buf != 0 && len > 0 && !self.mem.user_can(buf, len as u64, true) {
            return Reply::Ret(EFAULT);
        }
        let r = sys::raw_syscall(
            libc::SYS_ioctl as u64,
            [fd, SIOCGIFCONF, copy.as_mut_ptr() as u64, 0, 0, 0],
        );
        if r >= 0 {
            self.mem.write(ifc, &(copy[0] as u32).to_le_bytes());
        }
        Reply::Ret(r)
    }

    /// Serves `ioctl(fd, SIOCETHTOOL, ifr)` for the reading commands of [`ethtool_len`]; `fd`
    /// has been checked by the caller.
    pub(super) fn ethtool(&self, fd: u64, ifr: u64) -> Reply {
        if !self.mem.user_can(ifr, IFREQ_LEN as u64, false) {
            return Reply::Ret(EFAULT);
        }
        let mut req = [0u8; IFREQ_LEN];
        self.mem.read(ifr, &mut req);
        let data = u64::from_le_bytes(req[16..24].try_into().unwrap_or_default());
        if !self.mem.user_can(data, 4, false) {
            return Reply::Ret(EFAULT);
        }
        let mut word = [0u8; 4];
        self.mem.read(data, &mut word);
        let cmd = u32::from_le_bytes(word);
        let Some(len) = ethtool_len(cmd) else {
            return Reply::Ret(-(libc::EOPNOTSUPP as i64));
        };
        if !self.mem.user_can(data, len as u64, true) {
            return Reply::Ret(EFAULT);
        }
        let mut body = vec![0u8; len];
        self.mem.read(data, &mut body);
        // The command checked, whatever another thread wrote there since.
        body[..4].copy_from_slice(&word);
        req[16..24].copy_from_slice(&(body.as_mut_ptr() as u64).to_le_bytes());
        let r = sys::raw_syscall(
            libc::SYS_ioctl as u64,
            [fd, SIOCETHTOOL, req.as_mut_ptr() as u64, 0, 0, 0],
        );
        if r >= 0 {
            self.mem.write(data, &body);
        }
        Reply::Ret(r)
    }
}
