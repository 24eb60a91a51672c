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
//! The programs named in `Config::linux_exec` (default `config::LINUX_EXEC`: orted, prted; by file
//! name, or by absolute path) are exec'd by the VMM process itself: the forked VMM becomes the
//! program, a Linux process with the guest's pid, parent, cwd, credentials, rlimits and open
//! files (the guest's fds are the host's, below the VMM's range; close-on-exec ones close, the
//! VMM's own are made close-on-exec first), the calling thread's signal mask, SIG_IGN where the
//! guest ignores a signal (glibc's 32 and 33: where the VMM inherited SIG_IGN) and SIG_DFL elsewhere, and the CPUs the VMM had before it pinned its
//! vCPUs. The guest's pending signals are not carried over (Linux keeps them across execve).
//! A vfork parent is let go first, as at any exec's point of no return; if the host execve fails
//! after that (it is checked beforehand: path, permission, ELF), the error comes back to the
//! guest as execve's.

use crate::kernel::{lock, Kernel, Reply};
use std::ffi::CString;
use std::path::Path;

impl Kernel {
    /// True when `prog` (the path execve resolved) is a program that runs on Linux.
    pub(super) fn runs_on_linux(&self, prog: &Path) -> bool {
        let name = prog.file_name().and_then(|n| n.to_str()).unwrap_or("");
        self.linux_exec.iter().any(|p| {
            if p.starts_with('/') {
                Path::new(p) == prog
            } else {
                p == name
            }
        })
    }

    /// Replaces the guest's process by `prog` running on Linux; returns only when the host's
    /// execve failed (its errno for the guest).
    pub(super) fn exec_on_linux(&self, cpu: usize, prog: &Path, argv: &[Vec<u8>], envp: &[Vec<u8>]) -> Reply {
        use std::os::unix::ffi::OsStrExt;
        let cstrings = |v: &[Vec<u8>]| -> Option<Vec<CString>> {
            v.iter().map(|s| CString::new(s.clone()).ok()).collect()
        };
        let (Ok(path), Some(argv), Some(envp)) = (
            CString::new(prog.as_os_str().as_bytes()),
            cstrings(argv),
            cstrings(envp),
        ) else {
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
        let e = crate::sys::exec_on_host(
            &path,
            &argv,
            &envp,
            mask,
            ignored,
            affinity.as_ref(),
            self.fd_floor,
        );
        Reply::Ret(-(e as i64))
    }
}
