//! execve of a program that runs on Linux, outside the LWK (issue #15).
//!
//! An Open MPI program started alone (a singleton, no `mpirun`) forks and execs `orted` in its
//! MPI_Init, which then serves the rank's PMIx and runtime traffic. In the LWK the fork forks the
//! VMM and the exec loaded `orted` into the child's VM: a second LWK start-up (≈ 70 libraries and
//! components loaded through the LWK, their pages faulted through KVM's shadow tables, ≈ 3 500
//! system calls), the daemon's threads on the LWK's CPUs and its own proxy polling beside the
//! rank's. Under `mpirun` the daemons run on Linux and only the ranks in the LWK, as McKernel's
//! mcexec leaves the runtime's daemons to Linux; a singleton now gets the same placement.
//!
//! The programs named in `Config::linux_exec` (default none; `config::MPI_DAEMONS`: orted, prted; bare
//! names, or absolute paths) are exec'd by the VMM process itself: the forked VMM becomes the
//! program, a Linux process with the guest's pid, parent, cwd, credentials, rlimits and open
//! files (the guest's fds are the host's, below the VMM's range; close-on-exec ones close, the
//! VMM's own are made close-on-exec first), the calling thread's signal mask, SIG_IGN where the
//! guest ignores a signal (glibc's 32 and 33: where the VMM inherited SIG_IGN) and SIG_DFL elsewhere, and the CPUs the VMM had before it pinned its
//! vCPUs. The guest's pending signals are not carried over (Linux keeps them across execve).
//! A vfork parent is let go first, as at any exec's point of no return; if the host execve fails
//! after that (it is checked beforehand: path, permission, ELF), the error comes back to the
//! guest as execve's.

//!
//! **Which files** (issue #16, reported 2026-11-28: the list matched the file *name*, so a guest
//! that copied its own code to `/tmp/x/orted` and exec'd it ran on Linux, outside every check,
//! and read and wrote its parent VMM's memory). The list is resolved once, when the VMM starts
//! ([`trust`]): a bare name to every file of that name in the VMM's PATH (absolute directories
//! only) and Open MPI's package directories, an absolute path to its file; each is kept by
//! identity (device, inode and ctime). A file, or a directory on the way to it (each looked in
//! as the kernel would, symlinks followed), that the VMM's real uid may write is not trusted: the
//! guest could have put it there. A guest's execve runs on Linux only when the file it names is,
//! opened by the VMM (O_PATH), one of those, unchanged (same ctime) and still not writable by the
//! guest's real uid; the VMM then execs that very descriptor (`execveat(fd, "",
//! AT_EMPTY_PATH)`), so it cannot be swapped between the check and the exec. Any other file runs
//! in the LWK, whatever its name. For a root guest (which may write every file) the ownership
//! tests are skipped: its trusted files are as safe as the host's own binaries. The dynamic
//! loader's variables (LD_*, GCONV_PATH) of the program's environment are the VMM's own, not the
//! guest's (the guest's LD_PRELOAD would load its code into the trusted program).

use crate::kernel::{lock, Kernel, Reply};
use std::collections::VecDeque;
use std::ffi::{CString, OsString};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

/// Where Open MPI's distribution packages keep orted and prted, beside the PATH.
const MPI_DIRS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/openmpi/bin",
    "/usr/lib64/openmpi/bin",
    "/usr/lib/openmpi/bin",
];

/// Symlinks followed in one path, as Linux's MAXSYMLINKS.
const MAX_LINKS: usize = 40;

/// A file trusted to run on Linux: its identity when the VMM started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Identity {
    dev: u64,
    ino: u64,
    ctime: (i64, i64),
}

impl Identity {
    fn of(m: &std::fs::Metadata) -> Self {
        Identity {
            dev: m.dev(),
            ino: m.ino(),
            ctime: (m.ctime(), m.ctime_nsec()),
        }
    }
}

/// The files resolved from `Config::linux_exec` at start-up (inherited by forked VMMs).
static TRUSTED: Mutex<Vec<Identity>> = Mutex::new(Vec::new());
/// The VMM's own dynamic loader variables ("NAME=value"), given to a program run on Linux.
static LOADER_ENV: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// A user who is not root: who may write what.
struct Writer {
    uid: u32,
    groups: Vec<u32>,
}

impl Writer {
    /// The VMM's real uid and groups; None for root, who may write every file.
    fn now() -> Option<Writer> {
        let uid = crate::sys::uid();
        (uid != 0).then(|| Writer {
            uid,
            groups: crate::sys::groups(),
        })
    }

    fn may_write(&self, m: &std::fs::Metadata) -> bool {
        writable(m.uid(), m.gid(), m.mode(), self.uid, &self.groups)
    }
}

/// Whether a file of owner `owner`, group `group` and mode `mode` may be written by user `uid` of
/// `groups`: its owner (who may chmod it), or through a group or other write bit. (ACLs are not
/// read: a file an ACL lets the user write passes.)
fn writable(owner: u32, group: u32, mode: u32, uid: u32, groups: &[u32]) -> bool {
    owner == uid || (mode & 0o020 != 0 && groups.contains(&group)) || mode & 0o002 != 0
}

/// Resolves `Config::linux_exec` (`list`) to the files it trusts, and keeps the VMM's dynamic
/// loader variables; called when the VMM starts (`run.rs`, before `Kernel::set_linux_exec`).
pub(crate) fn trust(list: &[String]) {
    let who = Writer::now();
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).filter(|d| d.is_absolute()).collect())
        .unwrap_or_default();
    dirs.extend(MPI_DIRS.iter().map(PathBuf::from));
    let mut ids = Vec::new();
    for entry in list {
        let candidates: Vec<PathBuf> = if entry.starts_with('/') {
            vec![PathBuf::from(entry)]
        } else if entry.is_empty() || entry.contains('/') {
            Vec::new()
        } else {
            dirs.iter().map(|d| d.join(entry)).collect()
        };
        for c in candidates {
            if let Some(id) = trustworthy(&c, who.as_ref()) {
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
        }
    }
    *lock(&TRUSTED) = ids;
    *lock(&LOADER_ENV) = std::env::vars_os()
        .filter(|(k, _)| loader_variable(k.as_bytes()))
        .map(|(k, v)| [k.as_bytes(), b"=", v.as_bytes()].concat())
        .collect();
}

/// The identity of the regular file `path` names, when neither it nor a directory looked in on
/// the way to it is writable by `who` (None: root; nothing is refused).
fn trustworthy(path: &Path, who: Option<&Writer>) -> Option<Identity> {
    let m = match who {
        None => std::fs::metadata(path).ok()?,
        Some(w) => {
            let m = std::fs::metadata(resolve_unwritable(path, w)?).ok()?;
            if w.may_write(&m) {
                return None;
            }
            m
        }
    };
    m.is_file().then(|| Identity::of(&m))
}

/// The path components of `p` (its root and "." dropped).
fn components(p: &Path) -> VecDeque<OsString> {
    p.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            _ => None,
        })
        .collect()
}

/// Resolves the absolute `path` as the kernel does, component by component, following symlinks;
/// None when it does not resolve, or a directory looked in on the way (where a name could be
/// placed or swapped) is writable by `w`.
fn resolve_unwritable(path: &Path, w: &Writer) -> Option<PathBuf> {
    let mut at = PathBuf::from("/");
    let mut rest = components(path);
    let mut links = 0;
    while let Some(c) = rest.pop_front() {
        if c == ".." {
            at.pop();
            continue;
        }
        // `at` has no symlinks: its metadata is the directory's own.
        if w.may_write(&std::fs::metadata(&at).ok()?) {
            return None;
        }
        let next = at.join(&c);
        if std::fs::symlink_metadata(&next).ok()?.file_type().is_symlink() {
            links += 1;
            if links > MAX_LINKS {
                return None;
            }
            let target = std::fs::read_link(&next).ok()?;
            if target.is_absolute() {
                at = PathBuf::from("/");
            }
            let mut new = components(&target);
            new.extend(rest.drain(..));
            rest = new;
        } else {
            at = next;
        }
    }
    Some(at)
}

/// A variable of the dynamic loader's (and glibc's code-loading ones): LD_*, GCONV_PATH.
fn loader_variable(name: &[u8]) -> bool {
    name.starts_with(b"LD_") || name == b"GCONV_PATH"
}

/// The environment `envp` with its loader variables replaced by the VMM's own (`loader`).
fn with_loader_env(envp: &[Vec<u8>], loader: &[Vec<u8>]) -> Vec<Vec<u8>> {
    envp.iter()
        .filter(|e| {
            let name = e.split(|&c| c == b'=').next().unwrap_or(e);
            !loader_variable(name)
        })
        .chain(loader.iter())
        .cloned()
        .collect()
}

impl Kernel {
    /// The program `file` (the file execve opened and checked, `loader::exefile`), when it is a program
    /// that runs on Linux: one of the files trusted at start-up, unchanged, and not writable by
    /// the guest's real uid. None: it runs in the LWK.
    pub(super) fn runs_on_linux(&self, file: &crate::loader::exefile::ExeFile) -> Option<OwnedFd> {
        if self.linux_exec.is_empty() {
            return None;
        }
        let prog = file.path.as_path();
        let trusted = lock(&TRUSTED).clone();
        // The file the execve opened and checked, not the name looked up again.
        let fd = crate::loader::exefile::dup_high(file.path_fd()).ok()?;
        let file = std::fs::File::from(fd);
        let m = file.metadata().ok()?;
        let ok = m.is_file()
            && trusted.contains(&Identity::of(&m))
            && Writer::now().is_none_or(|w| !w.may_write(&m));
        if !ok {
            let name = prog.file_name().map(|n| n.as_bytes()).unwrap_or_default();
            if self
                .linux_exec
                .iter()
                .any(|p| p.as_bytes() == name || Path::new(p) == prog)
            {
                lock(&self.notes).push(format!(
                    "execve {}: named as a --linux-exec program, but not a file trusted at start-up: runs in the LWK",
                    prog.display()
                ));
            }
            return None;
        }
        Some(OwnedFd::from(file))
    }

    /// Replaces the guest's process by `program` (the file [`Kernel::runs_on_linux`] opened and
    /// checked; `prog` its path) running on Linux; returns only when the host's execve failed
    /// (its errno for the guest).
    pub(super) fn exec_on_linux(
        &self,
        cpu: usize,
        program: OwnedFd,
        prog: &Path,
        argv: &[Vec<u8>],
        envp: &[Vec<u8>],
    ) -> Reply {
        let cstrings = |v: &[Vec<u8>]| -> Option<Vec<CString>> {
            v.iter().map(|s| CString::new(s.clone()).ok()).collect()
        };
        let envp = with_loader_env(envp, &lock(&LOADER_ENV));
        let (Some(argv), Some(envp)) = (cstrings(argv), cstrings(&envp)) else {
            return Reply::Ret(-(libc::EINVAL as i64));
        };
        let mask = self.sigmask_of(cpu);
        let ignored = lock(&self.signals.actions)
            .iter()
            .enumerate()
            .skip(1)
            .filter(|(_, a)| a.raw[0] == libc::SIG_IGN as u64)
            .fold(0u64, |m, (sig, _)| m | (1 << (sig - 1)))
            // glibc's 32 and 33, which the guest cannot change: as the VMM inherited them.
            | crate::sys::glibc_signals_ignored();
        lock(&self.notes).push(format!(
            "execve {}: runs on Linux, outside the LWK",
            prog.display()
        ));
        // Exec's point of no return for a vfork parent, and the end of this process's trace.
        self.release_vfork_parent();
        self.trace_maps();
        self.finish_trace();
        let affinity = crate::sys::start_affinity();
        // The guest's own soft limits, which the LWK keeps (the VMM's are its own).
        let limits = [
            (libc::RLIMIT_NOFILE, crate::fds::guest_limit().0),
            (libc::RLIMIT_AS, crate::memlimit::guest_limit().0),
            (libc::RLIMIT_DATA, crate::memlimit::guest_data_limit().0),
        ];
        let e = crate::sys::exec_on_host(
            program.as_fd(),
            &argv,
            &envp,
            mask,
            ignored,
            affinity.as_ref(),
            self.fd_floor,
            &limits,
        );
        Reply::Ret(-(e as i64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_16_a_file_the_user_may_write_is_not_trusted() {
        let groups = [100, 27];
        // Its owner may chmod it, whatever its mode.
        assert!(writable(1000, 0, 0o555, 1000, &groups));
        // Root's, mode 755: no.
        assert!(!writable(0, 0, 0o755, 1000, &groups));
        // Group-writable: when the user is in the group.
        assert!(writable(0, 27, 0o775, 1000, &groups));
        assert!(!writable(0, 50, 0o775, 1000, &groups));
        // World-writable (a sticky /tmp too: a name may be placed there).
        assert!(writable(0, 0, 0o1777, 1000, &groups));
    }

    #[test]
    fn issue_16_loader_variables_are_the_vmms() {
        let envp: Vec<Vec<u8>> = [
            "PATH=/bin",
            "LD_PRELOAD=/tmp/x.so",
            "LD_LIBRARY_PATH=/tmp",
            "GCONV_PATH=/tmp",
            "X=LD_Y",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
        let vmm = vec![b"LD_LIBRARY_PATH=/opt/mpi/lib".to_vec()];
        let out = with_loader_env(&envp, &vmm);
        let out: Vec<&[u8]> = out.iter().map(|v| v.as_slice()).collect();
        assert_eq!(
            out,
            [&b"PATH=/bin"[..], b"X=LD_Y", b"LD_LIBRARY_PATH=/opt/mpi/lib"]
        );
    }

    #[test]
    fn issue_16_trusted_names_are_resolved_without_writable_directories() {
        // /usr/bin/env (or any file of root's in /usr/bin) resolves for a user who owns nothing
        // on the way; /tmp is world-writable, so nothing under it does.
        let w = Writer {
            uid: 4242,
            groups: vec![4242],
        };
        if let Some(p) = resolve_unwritable(Path::new("/usr/bin/env"), &w) {
            assert!(trustworthy(&p, Some(&w)).is_some());
        }
        let dir = std::env::temp_dir().join(format!("multios-i16x-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch dir");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let f = dir.join("orted");
        std::fs::write(&f, b"x").expect("write");
        assert!(resolve_unwritable(&f, &w).is_none());
        assert!(trustworthy(&f, Some(&w)).is_none());
        // Root trusts what the name finds (a root guest may write every file anyway).
        assert!(trustworthy(&f, None).is_some());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
