//! A procfs instance of the VMM's own, mounted nowhere (the new mount API: fsopen, fsconfig,
//! fsmount): for a VMM started where /proc is not procfs — a chroot, a container or a sandbox
//! without it — whose `/proc/…` by path would be a directory a root guest could fill (issue #16).

use std::io;

const FSOPEN_CLOEXEC: libc::c_uint = 1;
const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
const FSMOUNT_CLOEXEC: libc::c_uint = 1;

/// A new procfs instance of this process's pid namespace, attached to no mount point: the
/// descriptor (O_PATH, close-on-exec) of its root directory. Needs CAP_SYS_ADMIN over the mount
/// namespace and Linux 5.2; the caller owns the descriptor.
pub fn private_procfs() -> io::Result<i32> {
    // SAFETY: the file system's name is a NUL-terminated string that fsopen only reads.
    let fs = unsafe { libc::syscall(libc::SYS_fsopen, c"proc".as_ptr(), FSOPEN_CLOEXEC) };
    if fs < 0 {
        return Err(io::Error::last_os_error());
    }
    let fs = fs as i32;
    // SAFETY: FSCONFIG_CMD_CREATE takes no key, value or auxiliary argument (null, null, 0).
    let r = unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            fs,
            FSCONFIG_CMD_CREATE,
            std::ptr::null::<libc::c_char>(),
            std::ptr::null::<libc::c_void>(),
            0,
        )
    };
    let mnt = if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        // SAFETY: fsmount takes the configured context's descriptor and two plain flag words.
        match unsafe { libc::syscall(libc::SYS_fsmount, fs, FSMOUNT_CLOEXEC, 0) } {
            m if m < 0 => Err(io::Error::last_os_error()),
            m => Ok(m as i32),
        }
    };
    super::fd::close(fs);
    mnt
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_private_procfs_is_procfs_and_knows_this_process() {
        // Root here (CAP_SYS_ADMIN); elsewhere the call's error is the caller's message.
        match super::private_procfs() {
            Ok(fd) => {
                assert_eq!(super::super::fs_type(fd).ok(), Some(0x9fa0));
                let own = super::super::file_id_at(libc::AT_FDCWD, "/proc/self/exe").ok();
                assert_eq!(super::super::file_id_at(fd, "self/exe").ok(), own);
                super::super::close(fd);
            }
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EPERM), "{e}"),
        }
    }
}
