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
use crate::memory::CstrError;
use crate::sys;
use kvm_bindings::kvm_regs;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Linux's limit on one argument string, its NUL included (MAX_ARG_STRLEN, 32 pages).
const MAX_ARG_STRLEN: usize = 32 << 12;
/// Linux's PATH_MAX: a path without a NUL in its first 4096 bytes is ENAMETOOLONG.
const PATH_MAX: usize = 4096;

fn errno(e: i32) -> Reply {
    Reply::Ret(-(e as i64))
}

/// execve's path, argv and envp, read from the guest.
type ExecArgs = (Vec<u8>, Vec<Vec<u8>>, Vec<Vec<u8>>);

/// Takes `n` bytes from execve's `budget`: E2BIG when they are not there.
fn take(budget: &mut usize, n: usize) -> Result<(), i32> {
    *budget = budget.checked_sub(n).ok_or(libc::E2BIG)?;
    Ok(())
}

impl Kernel {
    /// The pointers of a NULL-terminated array (argv or envp; NULL itself is empty), as Linux's
    /// `count`: EFAULT when one cannot be read. Past `keep` pointers they are counted, not kept
    /// (the budget refuses them then, unless a fault comes first). Returns (pointers, count).
    fn read_pointers(&self, array: u64, keep: usize) -> Result<(Vec<u64>, usize), i32> {
        let mut out = Vec::new();
        if array == 0 {
            return Ok((out, 0));
        }
        for k in 0u64.. {
            let slot = array.checked_add(8 * k).ok_or(libc::EFAULT)?;
            let p = self.mem.read_user_u64(slot).map_err(|_| libc::EFAULT)?;
            if p == 0 {
                return Ok((out, k as usize));
            }
            if (k as usize) < keep {
                out.push(p);
            }
        }
        unreachable!("the loop returns at the array's NULL or at a fault")
    }

    /// The strings at `ptrs`, as Linux's `copy_strings`: each takes its bytes and NUL from
    /// `budget`; EFAULT for one that cannot be read, E2BIG for one over MAX_ARG_STRLEN or past
    /// the budget (issue #16: both were EFAULT).
    fn read_strings(&self, ptrs: &[u64], budget: &mut usize) -> Result<Vec<Vec<u8>>, i32> {
        let mut out = Vec::with_capacity(ptrs.len());
        for &p in ptrs {
            let s = self.mem.read_cstr_or(p, MAX_ARG_STRLEN).map_err(|e| match e {
                CstrError::Fault => libc::EFAULT,
                CstrError::TooLong => libc::E2BIG,
            })?;
            take(budget, s.len() + 1)?;
            out.push(s);
        }
        Ok(out)
    }

    /// execve's path, argv and envp (Linux's order: the path; the file, checked by `check`; the
    /// pointer arrays; the budget, a quarter of RLIMIT_STACK within [ARG_MAX, 6 MiB], that the
    /// pointers, the path and then the environment and argument strings take from).
    fn exec_args(
        &self,
        (path_ptr, argv_ptr, envp_ptr): (u64, u64, u64),
        check: impl FnOnce(&[u8]) -> Result<(), i32>,
    ) -> Result<ExecArgs, i32> {
        let path = self.mem.read_cstr_or(path_ptr, PATH_MAX).map_err(|e| match e {
            CstrError::Fault => libc::EFAULT,
            CstrError::TooLong => libc::ENAMETOOLONG,
        })?;
        check(&path)?;
        let mut budget = crate::stacklimit::arg_budget(crate::stacklimit::soft_limit()) as usize;
        let keep = budget / 8;
        let (argv, argc) = self.read_pointers(argv_ptr, keep)?;
        let (envp, envc) = self.read_pointers(envp_ptr, keep)?;
        let pointers = (argc.max(1).saturating_add(envc)).saturating_mul(8);
        if budget <= pointers {
            return Err(libc::E2BIG);
        }
        take(&mut budget, pointers)?;
        take(&mut budget, path.len() + 1)?;
        let envp = self.read_strings(&envp, &mut budget)?;
        let argv = self.read_strings(&argv, &mut budget)?;
        Ok((path, argv, envp))
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
        // The file is opened once, for execution (a FIFO, socket or device is EACCES, never
        // waited on), and read through that descriptor from here on (`loader::exefile`); the
        // guest's own /proc/self/exe, however spelled, is its program (`ownexe.rs`).
        let mut opened = None;
        let check = |p: &[u8]| {
            opened = Some(self.open_program(Path::new(OsStr::from_bytes(p)))?);
            Ok(())
        };
        let (path, argv, envp) = match self.exec_args((path_ptr, argv_ptr, envp_ptr), check) {
            Ok(a) => a,
            Err(e) => return errno(e),
        };
        let Some(file) = opened else {
            return errno(libc::EFAULT);
        };
        // `#!interpreter [arg]`: run the interpreter on the script, which may itself be a
        // script (up to Linux's 5 levels, then ELOOP).
        let (file, argv) = match script::follow(file, path.clone(), argv, |p| self.open_program(p)) {
            Ok(f) => f,
            Err(e) => return errno(e),
        };
        if !file.is_elf() {
            return errno(libc::ENOEXEC);
        }
        let name = String::from_utf8_lossy(&path).into_owned();
        // Its PT_INTERP is opened now, before the point of no return, as Linux does (a missing,
        // non-executable or FIFO interpreter is the caller's ENOENT or EACCES).
        let interp = match crate::loader::open_interpreter(&file, &name, |p| self.open_program(p)) {
            Ok(i) => i,
            Err(e) => return errno(e.errno()),
        };
        if let Some(program) = self.runs_on_linux(&file) {
            // The MPI runtime's daemons run on Linux (`linux_exec.rs`).
            return self.exec_on_linux(cpu, program, &file.path, &argv, &envp);
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
        let loaded = match crate::loader::load_program(
            &self.mem,
            &file,
            interp.as_ref(),
            &name,
            argv,
            envp,
            rewrite,
        ) {
            Ok(l) => l,
            Err(e) => return self.exec_failed(format!("loading {}: {e}", file.path.display())),
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
        *lock(&self.program.exe) = file.real_path().as_os_str().as_bytes().to_vec();
        // What the guest's /proc/self/exe opens from now on (`ownexe.rs`).
        drop(interp);
        *lock(&self.program.file) = Some(file.into_path_fd());
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
        // The FPU in its initial state, as Linux's exec leaves it. KVM_SET_FPU left the old
        // program's MXCSR in place here (its rounding mode and flush-to-zero reached the new
        // program: `issue_16_exec_starts_with_the_initial_floating_point_state`), so the whole XSAVE
        // image is replaced, as for a signal handler.
        let fpu = vcpu.get_xsave().map(|x| crate::signal::frame::initial_fpu(&x));
        let sregs = vcpu.get_sregs().map(|mut s| {
            s.fs.base = 0;
            s
        });
        match (
            vcpu.set_regs(&regs),
            fpu.map(|x| sys::kvm::set_xsave(vcpu, &x)),
            sregs.map(|s| vcpu.set_sregs(&s)),
        ) {
            (Ok(()), Ok(Ok(())), Ok(Ok(()))) => Reply::Resumed,
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
