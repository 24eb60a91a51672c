//! What a delegated call that yields file descriptors gave the guest: opens judged by what they
//! reached (`procfs::classify_fd`; the opens themselves are in `open.rs`), the guest's own maps answered from the LWK's view, VMM fds
//! hidden from fd-directory listings, and fds at or above the guest's RLIMIT_NOFILE refused
//! with EMFILE as Linux would (the VMM itself runs with a higher limit, see `fds.rs`).

#![allow(non_upper_case_globals)] // libc names the SYS_ constants in lower case

use crate::kernel::{lock, Kernel};
use crate::procfs::{self, Verdict};
use crate::{fds, sys};
use libc::*;

const ANON_INODE_FS_MAGIC: i64 = 0x0904_1934;
const PROC_SUPER_MAGIC: i64 = 0x9fa0;

fn close(fd: i64) {
    sys::close(fd as i32);
}

impl Kernel {
    /// The result a successful delegated call `nr` (arguments `a`) returns to the guest, given its
    /// host result `r` ≥ 0.
    pub(super) fn after_delegated(&self, nr: u64, a: &[u64; 6], r: i64) -> i64 {
        match nr as i64 {
            SYS_dup | SYS_socket | SYS_accept | SYS_accept4 | SYS_eventfd2 | SYS_epoll_create
            | SYS_epoll_create1 | SYS_timerfd_create | SYS_memfd_create | SYS_pidfd_open
            | SYS_inotify_init | SYS_inotify_init1 => self.limit_fd(r),
            SYS_pipe | SYS_pipe2 => self.limit_pair(a[0], r),
            SYS_socketpair => self.limit_pair(a[3], r),
            SYS_getdents if r > 0 => self.listed(a[0] as i32, a[1], r, 18),
            SYS_getdents64 if r > 0 => self.listed(a[0] as i32, a[1], r, 19),
            _ => r,
        }
    }

    /// An fd for the guest: closed and EMFILE when it is at or above the guest's soft limit.
    pub(super) fn limit_fd(&self, fd: i64) -> i64 {
        if fds::guest_may_hold(fd) {
            fd
        } else {
            close(fd);
            -(EMFILE as i64)
        }
    }

    /// pipe/pipe2/socketpair: both fds (an int[2] in the window, checked before the call).
    fn limit_pair(&self, at: u64, r: i64) -> i64 {
        let mut b = [0u8; 8];
        self.mem.read(at, &mut b);
        let (x, y) = (
            i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64,
            i32::from_le_bytes([b[4], b[5], b[6], b[7]]) as i64,
        );
        if fds::guest_may_hold(x) && fds::guest_may_hold(y) {
            r
        } else {
            close(x);
            close(y);
            -(EMFILE as i64)
        }
    }

    /// What the guest gets instead of open file `fd` (None: `fd` itself is fine): EACCES when it
    /// reaches a VMM's memory or fds, a memfd with the guest's own maps for a maps file.
    pub(super) fn judge(&self, fd: i32, flags: u64) -> Option<i64> {
        // One fstatfs decides for most opens: only procfs files need a closer look.
        let fs = sys::fs_type(fd).ok();
        let verdict = match fs {
            Some(PROC_SUPER_MAGIC) => procfs::classify_fd(fd),
            Some(_) => Verdict::Allow,
            None => Verdict::Refuse,
        };
        match verdict {
            Verdict::Refuse => Some(-(EACCES as i64)),
            Verdict::OwnMaps => Some(self.answer_with("maps", self.maps_text().as_bytes(), flags)),
            Verdict::OwnAuxv => {
                let bytes: Vec<u8> = lock(&self.program.auxv)
                    .iter()
                    .flat_map(|w| w.to_le_bytes())
                    .collect();
                Some(self.answer_with("auxv", &bytes, flags))
            }
            Verdict::OwnPersonality => {
                let p = self.persona.load(std::sync::atomic::Ordering::Relaxed);
                Some(self.answer_with("personality", format!("{p:08x}\n").as_bytes(), flags))
            }
            Verdict::OwnStatus(task) | Verdict::OwnStat(task) => self.own_status(fd, flags, verdict, task),
            // The link itself (O_PATH|O_NOFOLLOW); what it leads to is `ownexe.rs`'s.
            Verdict::OwnExe => None,
            Verdict::Allow | Verdict::FdDir if is_vmm_file(fd, fs) => Some(-(EACCES as i64)),
            Verdict::Allow | Verdict::FdDir => None,
        }
    }

    /// EACCES when a path argument of call `nr` names a VMM's memory or one of its fds however it
    /// is spelled: `readlinkat(fd of /proc/self/fd, "19750")`, `readlink("19750")` after a chdir
    /// there, or a procfs mounted elsewhere showed the guest the VMM's fds (found 2026-11-28 by an
    /// attacker probe: `anon_inode:kvm-vcpu:0`…), past the name net, which reads absolute
    /// `/proc/…` names only. Names that may matter (`check::worth_resolving`) are opened O_PATH
    /// without following the last link, moved above the floor, and judged as an open is.
    pub(super) fn path_reaches_vmm(&self, nr: u64, paths: &[super::check::PathArg]) -> Option<i64> {
        for p in paths {
            // Names that are not looked up: a memfd's name, a symbolic link's target, an
            // extended attribute's name.
            let looked_up = match nr as i64 {
                SYS_memfd_create => false,
                SYS_symlink | SYS_symlinkat => p.index != 0,
                SYS_getxattr | SYS_lgetxattr | SYS_fgetxattr | SYS_setxattr | SYS_lsetxattr
                | SYS_fsetxattr | SYS_removexattr | SYS_lremovexattr | SYS_fremovexattr => p.index == 0,
                _ => true,
            };
            if !looked_up || !super::check::worth_resolving(p.name.as_bytes()) {
                continue;
            }
            let opened = sys::create_high(fds::floor(), || {
                let r = sys::openat_raw(p.dirfd, &p.name, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);
                if r < 0 {
                    Err(std::io::Error::from_raw_os_error(-r as i32))
                } else {
                    Ok(r as i32)
                }
            });
            // A name that does not resolve reaches nothing (the call itself will say why).
            let Ok(fd) = opened else { continue };
            let fs = sys::fs_type(fd).ok();
            let refused = match fs {
                Some(PROC_SUPER_MAGIC) => procfs::classify_fd(fd) == Verdict::Refuse,
                _ => is_vmm_file(fd, fs),
            };
            sys::close(fd);
            if refused {
                return Some(-(EACCES as i64));
            }
        }
        None
    }

    /// A memfd holding `bytes`, in the guest's fd range, instead of the procfs file it opened.
    /// The guest's own `status` or `stat` (`procstatus.rs`) for an open that reads it; an open for
    /// writing or O_PATH, or a text that cannot be read, is left to the file itself (None).
    fn own_status(&self, fd: i32, flags: u64, verdict: Verdict, task: Option<i32>) -> Option<i64> {
        if flags & (O_ACCMODE | O_PATH | O_DIRECTORY) as u64 != O_RDONLY as u64 {
            return None;
        }
        let real = procfs::read_text(fd, fds::floor())?;
        let facts = self.guest_facts(task);
        Some(match verdict {
            Verdict::OwnStat(_) => self.answer_with(
                "stat",
                super::procstatus::patch_stat(&real, &facts).as_bytes(),
                flags,
            ),
            _ => self.answer_with(
                "status",
                super::procstatus::patch_status(&real, &facts).as_bytes(),
                flags,
            ),
        })
    }

    fn answer_with(&self, name: &str, bytes: &[u8], flags: u64) -> i64 {
        let name = format!("{ANSWER_PREFIX}{name}");
        match sys::memfd_with(&name, bytes, flags & O_CLOEXEC as u64 != 0) {
            Ok(m) => self.limit_fd(m as i64),
            Err(e) => -(e.raw_os_error().unwrap_or(ENOMEM) as i64),
        }
    }

    /// getdents/getdents64 that returned `n` bytes at `buf` from `fd` (names at byte `name_at` of
    /// each record): a VMM's fd directory lists only the guest's fds.
    fn listed(&self, fd: i32, buf: u64, n: i64, name_at: usize) -> i64 {
        if sys::fs_type(fd).ok() != Some(PROC_SUPER_MAGIC) || procfs::classify_fd(fd) != Verdict::FdDir {
            return n;
        }
        let mut b = vec![0u8; n as usize];
        self.mem.read(buf, &mut b);
        let kept = procfs::hide_high_fds(&mut b, name_at, self.fd_floor);
        self.mem.write(buf, &b[..kept]);
        kept as i64
    }
}

/// The name of the memfds that answer the guest's own procfs files (`Kernel::answer_with`).
const ANSWER_PREFIX: &str = "multios-procfs:";

/// True when `fd` is a memfd answering one of the guest's own procfs files (a sealed memfd of
/// that name: a guest's own memfd would need the same name and seals).
pub(super) fn is_procfs_answer(fd: i32) -> bool {
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    if sys::fs_type(fd).ok() != Some(TMPFS_MAGIC) {
        return false;
    }
    procfs::fd_path(fd).is_some_and(|p| p.starts_with(&format!("/memfd:{ANSWER_PREFIX}")))
}

/// True when `fd` is one of the VMM's own files (/dev/kvm, the VM, a vCPU, its eventfd), opened
/// again through a `fd/N` link of any procfs mount. An open through such
/// a link makes a new open file description, so the file is recognised by its inode (dev, ino);
/// the VM, vCPU and eventfd fds share the one anonymous inode, so any anonymous-inode file
/// reopened this way is refused, a guest's own eventfd included.
fn is_vmm_file(fd: i32, fs: Option<i64>) -> bool {
    if fs == Some(PROC_SUPER_MAGIC) {
        // A procfs directory — the VMM's own procfs root too, reopened through its fd/N — gives
        // the guest nothing an open("/proc") would not: what it opens below it is classified in
        // turn. Refusing the root made `ls /proc`, `ps` and every /proc/* glob fail in the LWK.
        return false;
    }
    let anon = fs == Some(ANON_INODE_FS_MAGIC);
    let kvm_dev = sys::char_device(fd) == Some(libc::makedev(10, 232));
    if !anon && !kvm_dev {
        return false;
    }
    let Ok(id) = sys::fd_file_id(fd) else {
        return true;
    };
    let floor = fds::floor();
    (floor..floor + fds::RESERVED as i32).any(|v| sys::fd_file_id(v).is_ok_and(|x| x == id))
}
