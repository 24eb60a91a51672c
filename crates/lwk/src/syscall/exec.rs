//! execve/execveat in the LWK: the same process (pid, open files, cwd, signal mask and pending
//! signals) continues with a new program in the same VM. Checks that can fail (path, permission,
//! format) come first; after the point of no return the old image is dropped (shared mappings
//! unmapped, the window zeroed), the new one is loaded like at start-up (`loader::load_program`),
//! handled signals go back to their default action, close-on-exec descriptors are closed, and the
//! calling vCPU restarts at the new entry point. `#!` scripts run their interpreter, which may be
//! a script in turn (`loader::script::follow`).
//! A guest with several threads gets ENOSYS with a report (Linux would kill the other threads).

use crate::kernel::{lock, Ctx, Kernel, Reply};
use crate::loader::script;
use crate::sys;
use kvm_bindings::{kvm_fpu, kvm_regs};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Linux's limits on one argument string and on all of them (MAX_ARG_STRLEN, a 2 MiB budget).
const MAX_ARG: usize = 128 << 10;
const MAX_TOTAL: usize = 2 << 20;

fn errno(e: i32) -> Reply {
    Reply::Ret(-(e as i64))
}

impl Kernel {
    /// Reads a NULL-terminated array of string pointers (argv or envp; NULL itself is empty).
    fn read_strings(&self, array: u64, total: &mut usize) -> Result<Vec<Vec<u8>>, i32> {
        let mut out = Vec::new();
        if array == 0 {
            return Ok(out);
        }
        for k in 0u64.. {
            let slot = array.checked_add(8 * k).ok_or(libc::EFAULT)?;
            let p = self.mem.read_user_u64(slot).map_err(|_| libc::EFAULT)?;
            if p == 0 {
                break;
            }
            let s = self.mem.read_cstr(p, MAX_ARG).ok_or(libc::EFAULT)?;
            *total += s.len() + 1 + 8;
            if *total > MAX_TOTAL {
                return Err(libc::E2BIG);
            }
            out.push(s);
        }
        Ok(out)
    }

    pub(super) fn execve(&self, ctx: Ctx<'_>, cpu: usize, nr: u64, a: [u64; 6]) -> Reply {
        let Ctx::Vcpu(vcpu) = ctx else {
            return Reply::NeedVcpu;
        };
        let (path_ptr, argv_ptr, envp_ptr) = if nr == libc::SYS_execveat as u64 {
            if a[0] as i32 != libc::AT_FDCWD || a[4] != 0 {
                return self.refuse(
                    nr,
                    "execveat with a directory fd or flags (only AT_FDCWD, no flags)",
                );
            }
            (a[1], a[2], a[3])
        } else {
            (a[0], a[1], a[2])
        };
        if self.live_threads.load(std::sync::atomic::Ordering::Acquire) > 1 {
            return self.refuse(nr, "execve from a guest with several threads");
        }
        let Some(path) = self.mem.read_cstr(path_ptr, 4096) else {
            return errno(libc::EFAULT);
        };
        let mut total = 0;
        let (mut argv, envp) = match (
            self.read_strings(argv_ptr, &mut total),
            self.read_strings(envp_ptr, &mut total),
        ) {
            (Ok(v), Ok(e)) => (v, e),
            (Err(e), _) | (_, Err(e)) => return errno(e),
        };
        // /proc/self/exe is the VMM's binary on the host: the guest means its own program.
        let mut prog = if path == b"/proc/self/exe" {
            PathBuf::from(OsStr::from_bytes(&lock(&self.program.exe)))
        } else {
            PathBuf::from(OsStr::from_bytes(&path))
        };
        if let Err(e) = executable(&prog) {
            return errno(e);
        }
        // `#!interpreter [arg]`: run the interpreter on the script, which may itself be a
        // script (up to Linux's 5 levels, then ELOOP).
        match script::follow(prog, path.clone(), argv, executable) {
            Ok((p, v)) => (prog, argv) = (p, v),
            Err(e) => return errno(e),
        }
        if !script::is_elf(&prog) {
            return errno(libc::ENOEXEC);
        }
        if let Some(program) = self.runs_on_linux(&prog) {
            // The MPI runtime's daemons run on Linux (`linux_exec.rs`).
            return self.exec_on_linux(cpu, program, &prog, &argv, &envp);
        }

        // The point of no return: the old image goes.
        // A vfork parent gets what the child wrote for it, and goes on (`vfork.rs`).
        self.release_vfork_parent();
        // A trace names the events so far with the map of the image that made them.
        self.trace_maps();
        let window = (self.mem.app.base, self.mem.app.len);
        if let Err(e) = self.unshare(window.0, window.1) {
            return Reply::Ret(e);
        }
        self.mem.zero(window.0, window.1);
        self.next.exec((window.0, window.0.saturating_add(window.1)));
        let rewrite = lock(&self.program.thunks).is_some();
        let name = String::from_utf8_lossy(&path).into_owned();
        let loaded = match crate::loader::load_program(&self.mem, &prog, &name, argv, envp, rewrite) {
            Ok(l) => l,
            Err(e) => return self.exec_failed(format!("loading {}: {e}", prog.display())),
        };
        *lock(&self.space.mm) = loaded.mm;
        *lock(&self.program.auxv) = loaded.auxv;
        self.note_images(&loaded.image, loaded.interp.as_ref());
        self.sync_all_protections();
        if let Some(t) = loaded.thunks {
            *lock(&self.program.thunks) = Some(t);
        }
        self.program
            .rewritten
            .fetch_add(loaded.rewritten, std::sync::atomic::Ordering::Relaxed);
        let exe = std::fs::canonicalize(&prog).unwrap_or(prog);
        *lock(&self.program.exe) = exe.as_os_str().as_bytes().to_vec();
        // The task's name is the path execve was given (a script's, not its interpreter's).
        sys::name_thread_after(&path);
        self.program
            .execs
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.reset_handlers();
        sys::close_on_exec(self.fd_floor);
        // A signalfd survives exec unless it was close-on-exec.
        self.collect_signalfds();
        if let Some(t) = lock(&self.threads).get_mut(cpu) {
            t.clear_child_tid = None;
            t.sig.saved_mask = None;
            t.sig.altstack = None;
        }

        let regs = kvm_regs {
            rip: loaded.entry,
            rsp: loaded.rsp,
            rflags: 0x202,
            ..Default::default()
        };
        let fpu = kvm_fpu {
            fcw: 0x37f,
            mxcsr: 0x1f80,
            ..Default::default()
        };
        let sregs = vcpu.get_sregs().map(|mut s| {
            s.fs.base = 0;
            s
        });
        match (
            vcpu.set_regs(&regs),
            vcpu.set_fpu(&fpu),
            sregs.map(|s| vcpu.set_sregs(&s)),
        ) {
            (Ok(()), Ok(()), Ok(Ok(()))) => Reply::Resumed,
            _ => self.exec_failed("setting the vCPU's registers for the new program".into()),
        }
    }

    /// After the point of no return Linux kills the process with SIGSEGV.
    fn exec_failed(&self, why: String) -> Reply {
        self.end_with_sigsegv(format!("execve: {why}"));
        Reply::Stop
    }

    /// How many times the guest has exec'd (its first program's symbols are stale after one).
    pub fn execs(&self) -> usize {
        self.program.execs.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The errno execve gives for `path` before reading it: ENOENT, EACCES (not executable, or a
/// directory).
fn executable(path: &Path) -> Result<(), i32> {
    crate::loader::check_interpreter(path)
}
