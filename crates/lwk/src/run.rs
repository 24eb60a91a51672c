//! Running a program in the LWK: resolve and load it (`loader`), build the kernel's state, and
//! drive the vCPUs (`machine`) to the end.

use crate::config::Config;
use crate::kernel::Kernel;
use crate::loader::{self, Symbols};
use crate::machine::drive;
use crate::memory::GuestMemory;
use crate::outcome::{LwkError, Outcome};
use crate::vcpu::Entry;
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::time::Instant;

/// Runs the program of `cfg` to completion.
pub fn run(cfg: &Config) -> Result<Outcome, LwkError> {
    let t0 = Instant::now();
    // The fd table grows to the VMM's fd range now, before the first VMM thread exists (see
    // `fds::grow_table`: later, with threads, the growth waits for an RCU grace period).
    crate::fds::floor();
    // The VMM's procfs, before anything reads it (the loader reads `self/stat`): /proc, or a
    // private instance where /proc is not procfs; without either the run is refused (issue #16).
    crate::procfs::init().map_err(LwkError::Proc)?;
    // The VMM's own streams, kept above the floor: the guest's 0–2 are its to close and reopen.
    let streams = crate::streams::Streams::take(crate::fds::floor());
    // What a program the guest execs on Linux runs on: the VMM's CPUs before any pinning.
    crate::sys::remember_start_affinity();
    crate::sys::remember_glibc_signals();
    // The syscall-site cache's directory, decided now: a guest's chroot or setuid later must not
    // move it into the guest's root (issue #16).
    crate::rewrite::remember_site_cache();
    // A reservation a killed multios left behind is given back first (issue #14).
    for swept in crate::reserve::sweep_stale() {
        crate::diag!("multios lwk: {swept}");
    }
    let reserved = if cfg.reserve {
        if cfg.cpus.is_empty() {
            return Err(LwkError::ReserveWithoutCpus);
        }
        Some(crate::reserve::hold(&cfg.cpus)?)
    } else {
        None
    };
    let mut phases = crate::costs::Phases::new(t0);
    let mem = Arc::new(GuestMemory::new(cfg.mem_size)?);
    if cfg.reserve {
        mem.lock()?;
    }
    phases.mark("guest memory");
    // The VM, its memslots and the CPUID table its vCPUs get are made on another thread while
    // this one finds and loads the program (`costs.vm_thread` says how long each took).
    let vm = {
        let mem = mem.clone();
        std::thread::Builder::new().name("lwk-vm".into()).spawn(move || {
            crate::vm::Vm::new(&mem, crate::fds::floor()).map(|mut vm| {
                vm.supported_cpuid();
                vm
            })
        })
    };
    let script = loader::resolve(&cfg.program)?;
    let argv: Vec<Vec<u8>> = cfg.argv.iter().map(|a| a.as_bytes().to_vec()).collect();
    // Opened once for execution (`loader::exefile`): a FIFO or a device is refused, not waited on.
    let file = loader::exefile::ExeFile::open(&script).map_err(|e| match e {
        libc::ENOENT => loader::LoadError::Missing(cfg.program.clone()),
        libc::EACCES => loader::LoadError::NotExecutable(cfg.program.clone()),
        e => loader::LoadError::Script {
            script: script.display().to_string(),
            source: std::io::Error::from_raw_os_error(e),
        },
    })?;
    // A `#!` script runs its interpreter on it (which may be a script in turn), as execve does.
    let name = script.as_os_str().as_bytes().to_vec();
    let (file, argv) =
        loader::script::follow(file, name, argv, loader::exefile::ExeFile::open).map_err(|e| {
            loader::LoadError::Script {
                script: script.display().to_string(),
                source: std::io::Error::from_raw_os_error(e),
            }
        })?;
    let interp = loader::open_interpreter(&file, &cfg.program, loader::exefile::ExeFile::open)?;
    let path = file.path.clone();
    let exe = file.real_path();
    let env = match &cfg.overrides {
        Some(o) => {
            for w in o.warnings(&path) {
                crate::diag!("multios lwk: {w}");
            }
            o.environment(&cfg.env)?
        }
        None => cfg.env.clone(),
    };
    phases.mark("resolve and overrides");
    let loaded = loader::load_program(
        &mem,
        &file,
        interp.as_ref(),
        &cfg.program,
        argv,
        env.iter().map(|e| e.as_bytes().to_vec()).collect(),
        cfg.rewrite_syscalls,
    )?;
    let (entry_rip, rsp, rewritten) = (loaded.entry, loaded.rsp, loaded.rewritten);
    phases.extend(&loaded.phases);
    mem.set_huge_pages(cfg.huge_pages);
    let mut kernel = Kernel::new(
        mem.clone(),
        loaded.mm,
        cfg.policy.clone(),
        exe.as_os_str().as_bytes().to_vec(),
        crate::fds::floor(),
        cfg.quiet,
    );
    if let Some(thunks) = loaded.thunks {
        kernel.set_thunks(thunks);
    }
    // What the guest's /proc/self/exe opens (`syscall/ownexe.rs`).
    kernel.set_program_file(file.into_path_fd());
    drop(interp);
    kernel.set_auxv(loaded.auxv);
    kernel.set_cpus(cfg.cpus.clone(), !cfg.cpus.is_empty());
    kernel.set_prefault(cfg.prefault);
    // A reserved window is faulted in already; --prefault populates when the mapping is made.
    if !cfg.reserve && !cfg.prefault && cfg.backend != crate::config::Backend::Exit {
        kernel.set_populate(cfg.populate_cap);
    }
    if !cfg.reserve && !cfg.prefault {
        kernel.set_populate_at_map(cfg.populate_at_map);
    }
    // Populated by the proxy between calls: not without one.
    if !cfg.reserve && !cfg.prefault && cfg.backend != crate::config::Backend::Exit {
        kernel.set_populate_next(cfg.populate_next);
    }
    // Resolved now, at start-up, to the files it trusts (`syscall/linux_exec.rs`).
    crate::syscall::linux_exec::trust(&cfg.linux_exec);
    // The perf event types the guest may open, read from sysfs while the root is still the VMM's.
    crate::syscall::init_pmu_types();
    kernel.set_linux_exec(cfg.linux_exec.clone());
    if let Some(r) = &reserved {
        kernel.note(format!(
            "{}; {} MiB of guest memory locked and pre-faulted",
            r.summary(),
            cfg.mem_size >> 20
        ));
    }
    if let Some(path) = &cfg.trace {
        kernel.set_trace(crate::trace::Tracer::create(path, &cfg.program).map_err(LwkError::Trace)?);
    }
    kernel.note_images(&loaded.image, loaded.interp.as_ref());
    phases.mark("kernel");
    // Before any vCPU exists: the first CR3 load sees the protections.
    kernel.sync_start_protections();
    phases.mark("page tables");
    let kernel = Arc::new(kernel);
    let traced = kernel.clone();
    let symbols = Symbols {
        main: loaded.image,
        interp: loaded.interp,
    };
    let vm = match vm {
        Ok(h) => Some(h.join().map_err(|_| LwkError::Stopped {
            what: "the thread creating the VM panicked".into(),
            rip: 0,
            symbol: None,
        })??),
        // No thread: the VM is made in `drive`.
        Err(_) => None,
    };
    // A stream closed when multios started is closed for the guest too (not Rust's /dev/null).
    streams.close_placeholders();
    // This thread runs vCPU 0: named after the program, as Linux names it at exec (`ps`, `pidof`,
    // /proc/self/comm said "multios").
    crate::sys::name_thread_after(cfg.program.as_bytes());
    let driven = drive(
        cfg,
        mem,
        kernel,
        Entry {
            rip: entry_rip,
            rsp,
            ..Default::default()
        },
        symbols,
        phases,
        vm,
    );
    // A run that failed still ends its trace (the map names the functions of its events).
    traced.finish_trace();
    if cfg.reserve {
        traced.mem.unlock();
    }
    drop(reserved);
    // The last reference to the kernel and so to the guest memory: unmapped here.
    let t = Instant::now();
    drop(traced);
    let unmap = t.elapsed().as_secs_f64();
    streams.restore();
    let mut o = driven?;
    o.costs.teardown.push(("unmap the guest memory".into(), unmap));
    o.rewritten += rewritten;
    Ok(o)
}
