//! The mount a descriptor lies on, asked of the kernel without opening anything: statx's unique
//! mount id and statmount(2) (Linux 6.8). Reading `fdinfo` and `mountinfo` for the same answer
//! needs descriptors, and a descriptor of the VMM is, for a moment, in the guest's range.

use std::io;

const STATX_MNT_ID_UNIQUE: u32 = 0x4000;
/// Offset of `stx_mnt_id` in struct statx.
const STX_MNT_ID: usize = 144;
const SYS_STATMOUNT: libc::c_long = 457;
const STATMOUNT_SB_BASIC: u64 = 0x1;
const STATMOUNT_MNT_ROOT: u64 = 0x8;
const STATMOUNT_MNT_POINT: u64 = 0x10;
/// struct mnt_id_req, version 0: size, spare, mnt_id, param.
const MNT_ID_REQ_SIZE_VER0: u32 = 24;
/// Offsets in struct statmount; its strings start after the fixed 512-byte part.
const SM_MASK: usize = 8;
const SM_SB_MAGIC: usize = 24;
const SM_MNT_ROOT: usize = 104;
const SM_MNT_POINT: usize = 108;
const SM_STR: usize = 512;

/// A mount's filesystem magic, root (inside its filesystem) and mount point (under this process's
/// root): mountinfo's fields 4 and 5, unescaped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountOf {
    pub magic: u64,
    pub root: String,
    pub point: String,
}

/// The mount of open file `fd`; ENOSYS or EINVAL from a kernel without statmount or the unique
/// mount id (the caller then reads procfs).
pub fn mount_of_fd(fd: i32) -> io::Result<MountOf> {
    let mut stx = [0u8; 256];
    // SAFETY: statx writes at most sizeof(struct statx) = 256 bytes into `stx`; the empty path is
    // NUL-terminated and only read.
    let r = unsafe {
        libc::syscall(
            libc::SYS_statx,
            fd,
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            STATX_MNT_ID_UNIQUE,
            stx.as_mut_ptr(),
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    if u32::from_le_bytes([stx[0], stx[1], stx[2], stx[3]]) & STATX_MNT_ID_UNIQUE == 0 {
        return Err(io::Error::from_raw_os_error(libc::ENOSYS));
    }
    let id = u64_at(&stx, STX_MNT_ID);
    let mut req = [0u8; MNT_ID_REQ_SIZE_VER0 as usize];
    req[0..4].copy_from_slice(&MNT_ID_REQ_SIZE_VER0.to_le_bytes());
    req[8..16].copy_from_slice(&id.to_le_bytes());
    let want = STATMOUNT_SB_BASIC | STATMOUNT_MNT_ROOT | STATMOUNT_MNT_POINT;
    req[16..24].copy_from_slice(&want.to_le_bytes());
    let mut buf = vec![0u8; SM_STR + 2 * libc::PATH_MAX as usize];
    // SAFETY: statmount reads the request (its size in its first word) and writes at most
    // `buf.len()` bytes into `buf`.
    let r = unsafe { libc::syscall(SYS_STATMOUNT, req.as_ptr(), buf.as_mut_ptr(), buf.len(), 0u32) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    if u64_at(&buf, SM_MASK) & want != want {
        return Err(io::Error::from_raw_os_error(libc::ENOSYS));
    }
    let text = |at: usize| -> io::Result<String> {
        let off = SM_STR + u32::from_le_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]) as usize;
        let s = buf
            .get(off..)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EOVERFLOW))?;
        let end = s
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EOVERFLOW))?;
        Ok(String::from_utf8_lossy(&s[..end]).into_owned())
    };
    Ok(MountOf {
        magic: u64_at(&buf, SM_SB_MAGIC),
        root: text(SM_MNT_ROOT)?,
        point: text(SM_MNT_POINT)?,
    })
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn the_mount_of_a_procfs_file_is_procs() {
        let f = std::fs::File::open("/proc/self/status").expect("/proc/self/status");
        match mount_of_fd(f.as_raw_fd()) {
            Ok(m) => {
                assert_eq!(m.magic, 0x9fa0, "{m:?}");
                assert_eq!(m.point, "/proc", "{m:?}");
                assert_eq!(m.root, "/", "{m:?}");
            }
            // An older kernel: the caller reads procfs instead.
            Err(e) => assert!(
                matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EINVAL)),
                "{e}"
            ),
        }
    }
}
