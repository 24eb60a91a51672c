//! The program loader, used by the first start (`run.rs`) and by execve (`syscall/exec.rs`): finds
//! the program, loads its ELF image and interpreter into the application window ([`elf`]), rewrites
//! syscall sites when asked, and builds the initial stack with argv, envp and the auxiliary vector
//! ([`stack`]); `#!` scripts run their interpreter ([`script`]).

pub mod ehframe;
pub mod elf;
pub mod exefile;
pub mod script;
pub mod stack;

use crate::memory::{GuestMemory, APP_BASE};
use crate::mm::Mm;
use elf::{ElfError, Image};
use exefile::ExeFile;
use stack::StackSpec;
use std::path::{Path, PathBuf};

/// Errors while finding and loading a program.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Elf(#[from] ElfError),
    #[error("program '{0}' not found (looked in PATH)")]
    NotFound(String),
    #[error("program '{0}': no such file or directory")]
    Missing(String),
    #[error("program '{0}': permission denied (not executable by you, a directory, or on a noexec mount: Linux would not run it either)")]
    NotExecutable(String),
    #[error("interpreter '{interp}' of '{program}': {source}")]
    Interp {
        program: String,
        interp: String,
        source: ElfError,
    },
    /// The `#!` chain of a script cannot be followed (a missing or non-executable interpreter,
    /// more than 5 levels: ENOENT, EACCES, ELOOP as execve says).
    #[error("script '{script}': bad interpreter: {source}")]
    Script { script: String, source: std::io::Error },
    /// The arguments and environment do not fit the stack (Linux: E2BIG past a quarter of
    /// RLIMIT_STACK; here past a quarter of the LWK's stack, or below the loaded images).
    #[error("program '{program}': its arguments and environment ({bytes} bytes) do not fit its stack (at most {room} bytes): shorten them, or raise --mem-mib")]
    ArgsTooLong { program: String, bytes: u64, room: u64 },
}

impl LoadError {
    /// The exit status a shell (or `env`, `timeout`) gives when it cannot run the program: 127
    /// when it (or its interpreter) does not exist, 126 when it exists but cannot be executed.
    pub fn exit_code(&self) -> i32 {
        let missing = |e: &std::io::Error| e.kind() == std::io::ErrorKind::NotFound;
        let of_elf = |e: &ElfError| matches!(e, ElfError::Read { source, .. } if missing(source));
        let not_found = match self {
            LoadError::NotFound(_) | LoadError::Missing(_) => true,
            LoadError::Elf(e) | LoadError::Interp { source: e, .. } => of_elf(e),
            LoadError::Script { source, .. } => missing(source),
            LoadError::NotExecutable(_) | LoadError::ArgsTooLong { .. } => false,
        };
        if not_found {
            127
        } else {
            126
        }
    }
}

impl LoadError {
    /// The errno execve returns for this error before its point of no return: the interpreter's
    /// own (ENOENT, EACCES…) when it could not be opened, ENOEXEC for a file that is not an ELF
    /// program the LWK can run.
    pub fn errno(&self) -> i32 {
        let of = |e: &std::io::Error| e.raw_os_error().unwrap_or(libc::ENOEXEC);
        match self {
            LoadError::Interp {
                source: ElfError::Read { source, .. },
                ..
            } => of(source),
            LoadError::Script { source, .. } => of(source),
            LoadError::NotFound(_) | LoadError::Missing(_) => libc::ENOENT,
            LoadError::NotExecutable(_) => libc::EACCES,
            LoadError::ArgsTooLong { .. } => libc::E2BIG,
            LoadError::Elf(_) | LoadError::Interp { .. } => libc::ENOEXEC,
        }
    }
}

/// Opens the interpreter `file`'s PT_INTERP names with `open` (execve's checks: a FIFO, a device
/// or a file without an x bit is EACCES, never opened for reading), before anything is loaded.
pub(crate) fn open_interpreter(
    file: &ExeFile,
    name: &str,
    open: impl Fn(&Path) -> Result<ExeFile, i32>,
) -> Result<Option<ExeFile>, LoadError> {
    let Some(interp) = elf::interpreter_of(file)? else {
        return Ok(None);
    };
    open(Path::new(&interp)).map(Some).map_err(|e| LoadError::Interp {
        program: name.to_string(),
        interp: interp.clone(),
        source: ElfError::Read {
            path: PathBuf::from(&interp),
            source: std::io::Error::from_raw_os_error(e),
        },
    })
}

/// Finds `program` like execvp: a path is taken as it is (it must be executable: the loader reads
/// the file itself, so the kernel's execute check is made here — a mode-644 file ran before); a
/// name is the first executable file of that name in PATH, a non-executable one skipped.
pub fn resolve(program: &str) -> Result<PathBuf, LoadError> {
    let runnable = |p: &Path| p.is_file() && crate::sys::may_execute(p);
    if program.contains('/') {
        let p = PathBuf::from(program);
        if !p.exists() {
            return Err(LoadError::Missing(program.to_string()));
        }
        if !runnable(&p) {
            return Err(LoadError::NotExecutable(program.to_string()));
        }
        return Ok(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    let candidates: Vec<PathBuf> = std::env::split_paths(&path).map(|d| d.join(program)).collect();
    if let Some(p) = candidates.iter().find(|p| runnable(p)) {
        return Ok(p.clone());
    }
    if candidates.iter().any(|p| p.is_file()) {
        return Err(LoadError::NotExecutable(program.to_string()));
    }
    Err(LoadError::NotFound(program.to_string()))
}

fn random16() -> [u8; 16] {
    let mut b = [0u8; 16];
    let _ = crate::sys::raw_syscall(
        libc::SYS_getrandom as u64,
        [b.as_mut_ptr() as u64, 16, 0, 0, 0, 0],
    );
    b
}

fn hwcap() -> u64 {
    std::arch::x86_64::__cpuid(1).edx as u64
}

/// A program loaded into guest memory, ready to start.
pub(crate) struct Loaded {
    pub image: Image,
    pub interp: Option<Image>,
    /// Where the first instruction runs (the interpreter's entry for a dynamic program).
    pub entry: u64,
    /// The initial stack pointer (argc, argv, envp, auxv).
    pub rsp: u64,
    /// The auxiliary vector on that stack, (type, value) words to AT_NULL (`/proc/self/auxv`).
    pub auxv: Vec<u64>,
    /// The memory manager, with the images reserved.
    pub mm: Mm,
    /// With rewriting: the thunks handed out so far.
    pub thunks: Option<crate::rewrite::Thunks>,
    pub rewritten: usize,
    /// How long loading took, step by step (`costs.rs`).
    pub phases: Vec<(&'static str, std::time::Duration)>,
}

/// Loads the ELF program `file` (named `name` in messages and AT_EXECFN) and its interpreter
/// `interp` (the file [`open_interpreter`] opened for it) into the (empty) application window of
/// `mem`, rewrites syscall sites when asked, and builds the initial stack with `argv`, `envp` and
/// the auxiliary vector. Used at start-up and by execve.
pub(crate) fn load_program(
    mem: &GuestMemory,
    file: &ExeFile,
    interp: Option<&ExeFile>,
    name: &str,
    argv: Vec<Vec<u8>>,
    envp: Vec<Vec<u8>>,
    rewrite: bool,
) -> Result<Loaded, LoadError> {
    let mut t = std::time::Instant::now();
    let mut phases = Vec::new();
    let mut mark = |name: &'static str| {
        phases.push((name, t.elapsed()));
        t = std::time::Instant::now();
    };
    // The stack reservation follows the soft RLIMIT_STACK (`stacklimit.rs`).
    let soft = crate::stacklimit::soft_limit();
    let stack = crate::stacklimit::reservation(soft, mem.app.len);
    let mut mm = Mm::with_stack(mem.app.base, mem.app.end(), mem.app.base, stack);
    let image = elf::load(file, mem, &mut mm, Some(APP_BASE), false)?;
    mark("load program");
    let mut mm2 = Mm::with_stack(mem.app.base, mem.app.end(), image.hi, stack);
    mm2.reserve(image.lo, image.hi - image.lo);
    let mut interp_image = None;
    if let Some(wanted) = &image.interp {
        let interp_err = |source| LoadError::Interp {
            program: name.to_string(),
            interp: wanted.clone(),
            source,
        };
        // The caller opened it from the same open file's PT_INTERP.
        let interp = interp.ok_or_else(|| {
            interp_err(ElfError::Read {
                path: PathBuf::from(wanted),
                source: std::io::Error::from_raw_os_error(libc::ENOENT),
            })
        })?;
        let i = elf::load(interp, mem, &mut mm2, None, rewrite).map_err(interp_err)?;
        interp_image = Some(i);
        mark("load interpreter");
    }
    let entry = interp_image.as_ref().map_or(image.entry, |i| i.entry);
    let mut rewritten = 0;
    let mut thunks = crate::rewrite::Thunks::new(mem);
    if rewrite {
        for img in std::iter::once(&image).chain(interp_image.as_ref()) {
            let mut starts: Vec<u64> = img.symbols.iter().map(|s| s.0).collect();
            starts.extend_from_slice(&img.code_starts);
            starts.sort_unstable();
            starts.dedup();
            for &(a, l) in &img.exec {
                rewritten += crate::rewrite::rewrite_from(mem, &mut thunks, a, l, &starts);
            }
        }
        mark("rewrite syscall sites");
    }
    let (uid, euid, gid, egid) = crate::sys::credentials();
    let spec = StackSpec {
        argv,
        envp,
        execfn: name.as_bytes().to_vec(),
        auxv: vec![
            (stack::AT_PHDR, image.phdr),
            (stack::AT_PHENT, image.phent),
            (stack::AT_PHNUM, image.phnum),
            (stack::AT_PAGESZ, 4096),
            (stack::AT_BASE, interp_image.as_ref().map_or(0, |i| i.bias)),
            (stack::AT_FLAGS, 0),
            (stack::AT_ENTRY, image.entry),
            (stack::AT_UID, uid as u64),
            (stack::AT_EUID, euid as u64),
            (stack::AT_GID, gid as u64),
            (stack::AT_EGID, egid as u64),
            (stack::AT_SECURE, 0),
            (stack::AT_HWCAP, hwcap()),
            (stack::AT_HWCAP2, 2), // HWCAP2_FSGSBASE: CR4.FSGSBASE is on
            (stack::AT_CLKTCK, 100),
        ],
        random: random16(),
    };
    // The strings, their pointers and the vector must fit Linux's budget for RLIMIT_STACK (a
    // quarter of it, within [128 KiB, 6 MiB]; a page more for the vector) and stay above the
    // images (a small --mem-mib window: the loader wrote outside guest memory and the VMM
    // panicked).
    let top = mem.app.end();
    let images_end = interp_image.as_ref().map_or(image.hi, |i| i.hi.max(image.hi));
    let room = (crate::stacklimit::arg_budget(soft) + crate::mm::PAGE).min(top.saturating_sub(images_end));
    let bytes = stack::size(&spec);
    if bytes > room {
        return Err(LoadError::ArgsTooLong {
            program: name.to_string(),
            bytes,
            room,
        });
    }
    let (rsp, auxv, strings) = stack::build(mem, top, &spec);
    // `ps`, `pgrep`, `pidof` and the guest itself read /proc/PID/cmdline, environ and stat: the
    // guest's strings and ranges (in the window, which is this process's memory), not the VMM's.
    let _ = crate::sys::set_mm_view(&mm_view(&image, rsp, strings));
    mark("stack");
    Ok(Loaded {
        image,
        interp: interp_image,
        entry,
        rsp,
        auxv,
        mm: mm2,
        thunks: rewrite.then_some(thunks),
        rewritten,
        phases,
    })
}

/// Symbol tables for fault reports.
pub struct Symbols {
    pub main: Image,
    pub interp: Option<Image>,
}

impl Symbols {
    pub fn lookup(&self, addr: u64) -> Option<String> {
        self.main
            .symbolize(addr)
            .or_else(|| self.interp.as_ref().and_then(|i| i.symbolize(addr)))
    }
}

/// The program's ranges as Linux's ELF loader records them in the mm (code: the executable
/// segments; data: from the highest segment's start to the end of the file-backed part).
fn mm_view(image: &Image, rsp: u64, strings: stack::Strings) -> crate::sys::MmView {
    let exec = image.segments.iter().filter(|s| s.3 & libc::PROT_EXEC != 0);
    let code = (
        exec.clone().map(|s| s.0).min().unwrap_or(image.lo),
        exec.map(|s| s.1).max().unwrap_or(image.hi),
    );
    let data = (
        image.segments.iter().map(|s| s.0).max().unwrap_or(image.lo),
        image.segments.iter().map(|s| s.1).max().unwrap_or(image.hi),
    );
    crate::sys::MmView {
        code,
        data,
        stack: rsp,
        args: strings.args,
        env: strings.env,
    }
}
