//! `proxy`: the McKernel-style proxy process. The program runs under a seccomp filter that raises a
//! user notification for delegated calls; supervisor threads pinned on the control CPUs busy-poll the
//! listener, spin f_c there and f_c back, then answer CONTINUE, so the call then executes in the
//! caller's own context on the compute CPU (every call keeps its semantics). The filter is inherited
//! by threads, children and exec'd images, so all of them follow the policy.

use crate::cost::{Rng, Sampler};
use crate::cpus::{pin_current_thread, CpuSet};
use crate::report::Exit;
use crate::sys;
use crate::tsc;
use crate::Delegation;
use crate::EmulateError;
use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;

/// What the supervisors measured.
#[derive(Debug, Default)]
pub struct Served {
    pub counts: Vec<u64>,
    /// One-way delivered costs, ticks (capped at `MAX_SAMPLES`).
    pub delivered: Vec<u64>,
}

const MAX_SAMPLES: usize = 4_000_000;

/// Everything the child needs, prepared before `fork` (the child must not allocate).
struct Prepared {
    image: multios_host::process::ExecImage,
    prog: Vec<libc::sock_filter>,
    compute: libc::cpu_set_t,
    app_realtime: bool,
    /// multios's pid: the child dies with it (`sys::die_with_parent`).
    parent: libc::pid_t,
    /// Descriptors to copy onto 0, 1, 2 (`-1`: inherit), opened before the fork (`RunIo`).
    streams: [RawFd; 3],
    /// The directory to run in (`RunIo::cwd`).
    cwd: Option<CString>,
}

fn prepare(
    path: CString,
    argv: &[std::ffi::OsString],
    d: &Delegation,
    compute: &CpuSet,
    app_realtime: bool,
    streams: &crate::runio::Opened,
    io: &crate::RunIo,
) -> Result<Prepared, EmulateError> {
    let cstr = |s: &std::ffi::OsStr| {
        CString::new(s.as_encoded_bytes()).map_err(|_| EmulateError::Nul(s.to_string_lossy().into_owned()))
    };
    let argv: Vec<CString> = argv.iter().map(|a| cstr(a)).collect::<Result<_, _>>()?;
    let env: Vec<CString> = std::env::vars_os()
        .filter_map(|(k, v)| {
            let mut kv = k.into_encoded_bytes();
            kv.push(b'=');
            kv.extend(v.into_encoded_bytes());
            CString::new(kv).ok()
        })
        .collect();
    // Nothing delegated: no filter at all (even an always-allow filter puts every call on the
    // kernel's slow syscall-entry path, ≈ 40 ns here: docs/EMULATOR.md "Pass-through cost").
    let prog = if d.count() == 0 {
        Vec::new()
    } else {
        crate::bpf::filter(d, libc::SECCOMP_RET_USER_NOTIF, sys::exempt_ip())
    };
    Ok(Prepared {
        image: multios_host::process::ExecImage::new(path, argv, env),
        prog,
        compute: compute.to_libc().map_err(|cause| EmulateError::Io {
            what: format!("compute CPUs {compute}"),
            cause,
        })?,
        app_realtime,
        parent: std::process::id() as libc::pid_t,
        streams: [&streams.stdin, &streams.stdout, &streams.stderr]
            .map(|f| f.as_ref().map_or(-1, |f| f.as_raw_fd())),
        cwd: io.cwd_cstring()?,
    })
}

/// Runs the child side after `fork`. Never returns.
fn child(p: &Prepared, sock: RawFd, err_w: RawFd) -> ! {
    if let Err(e) = sys::die_with_parent(p.parent) {
        die(err_w, e.raw_os_error().unwrap_or(0) | 0x5_0000);
    }
    if let Err(e) = multios_host::cpus::pin_thread_to_mask(0, &p.compute) {
        die(err_w, e.raw_os_error().unwrap_or(0) | 0x1_0000);
    }
    if p.app_realtime {
        sys::set_fifo(APP_PRIO);
    }
    for (target, &fd) in p.streams.iter().enumerate() {
        if fd >= 0 {
            if let Err(e) = sys::dup_onto(fd, target as RawFd) {
                die(err_w, e.raw_os_error().unwrap_or(0) | 0x6_0000);
            }
        }
    }
    if let Some(dir) = &p.cwd {
        if let Err(e) = sys::chdir(dir) {
            die(err_w, e.raw_os_error().unwrap_or(0) | 0x7_0000);
        }
    }
    if !p.prog.is_empty() {
        let fd = match sys::install_listener(&p.prog) {
            Ok(fd) => fd,
            Err(e) => die(err_w, e.raw_os_error().unwrap_or(0) | 0x2_0000),
        };
        if let Err(e) = sys::send_fd_exempt(sock, fd) {
            die(err_w, e.raw_os_error().unwrap_or(0) | 0x3_0000);
        }
        sys::exempt_close(fd); // our copy of the listener
    }
    let r = sys::exec_exempt(&p.image);
    die(err_w, (-r) as i32 | 0x4_0000)
}

/// Reports `code` on the error pipe and exits, from the exempt site (the child has the filter).
fn die(err_w: RawFd, code: i32) -> ! {
    sys::exempt_write(err_w, &code.to_ne_bytes());
    sys::exempt_exit(127)
}

/// Decodes what the child reported before exec.
fn child_error(code: i32, cmd: &str) -> EmulateError {
    let e = std::io::Error::from_raw_os_error(code & 0xffff);
    let stage = match code >> 16 {
        1 => "pinning it to the compute CPUs",
        2 => "installing the seccomp filter",
        3 => "handing the seccomp listener to the supervisor",
        5 => "tying its life to multios (PR_SET_PDEATHSIG)",
        6 => "redirecting its stdin, stdout or stderr",
        7 => "entering its working directory",
        _ => "executing it",
    };
    EmulateError::Launch {
        cmd: cmd.to_string(),
        stage,
        cause: e,
    }
}

/// The outcome of one proxied run.
pub struct Outcome {
    pub exit: Exit,
    pub wall_secs: f64,
    pub cpu_secs: f64,
    pub served: Served,
    /// The signal multios received and forwarded to the program (the report is then partial).
    pub interrupted: Option<i32>,
}

/// Runs `cfg`'s program (already resolved to `path`) under the proxy mechanism, delegating `d`
/// (the policy with the calls the mechanism keeps local removed).
pub fn run(
    path: CString,
    cfg: &crate::Config,
    d: &Delegation,
    samplers: Arc<Vec<Sampler>>,
    io: &crate::RunIo,
) -> Result<Outcome, EmulateError> {
    let (argv, compute, control, wait) = (&cfg.argv, &cfg.compute, &cfg.control, cfg.wait);
    let streams = io.open()?;
    let p = prepare(path, argv, d, compute, wait.app_realtime, &streams, io)?;
    let cmd = argv
        .first()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (sock_parent, sock_child) = socketpair()?;
    let (err_r, err_w) = pipe()?;
    tsc::calibration();
    let t0 = std::time::Instant::now();
    // The child only makes raw system calls (the exempt-site wrappers of `sys`) on memory
    // prepared before the fork.
    let pid = sys::fork_child(|| child(&p, sock_child.as_raw_fd(), err_w.as_raw_fd())).map_err(|cause| {
        EmulateError::Io {
            what: "fork".into(),
            cause,
        }
    })?;
    drop(sock_child);
    drop(err_w);
    drop(streams);
    let fwd = sys::Forward::to(pid);
    if p.prog.is_empty() {
        // Nothing delegated, no filter: no listener and no supervisor.
        let (status, cpu_secs) = sys::wait_child(pid).map_err(|e| EmulateError::Io {
            what: "waitpid".into(),
            cause: e,
        })?;
        let wall_secs = t0.elapsed().as_secs_f64();
        if let Some(e) = read_child_error(&err_r, &cmd) {
            return Err(e);
        }
        return Ok(Outcome {
            exit: Exit::from_wait_status(status),
            wall_secs,
            cpu_secs,
            served: Served {
                counts: vec![0; multios_syscalls::MAX_NR],
                delivered: Vec::new(),
            },
            interrupted: fwd.caught(),
        });
    }
    let listener = match sys::recv_fd(sock_parent.as_raw_fd()) {
        Ok(fd) => fd,
        Err(_) => {
            sys::wait_child(pid).ok();
            return Err(
                read_child_error(&err_r, &cmd).unwrap_or_else(|| EmulateError::Launch {
                    cmd,
                    stage: "starting it",
                    cause: std::io::Error::other("the child exited before sending the seccomp listener"),
                }),
            );
        }
    };
    let listener = Arc::new(listener);
    let busy = d.count() > 0 && wait.busy_supervisor;
    let rt = wait.realtime;
    let awake = (d.count() > 0 && wait.idle_spinner).then(|| crate::spinner::IdleSpinner::start(compute));
    let mut handles = Vec::new();
    for (i, cpu) in control.0.iter().enumerate() {
        let (l, s, cpu) = (listener.clone(), samplers.clone(), *cpu);
        handles.push(std::thread::spawn(move || {
            supervise(l.as_raw_fd(), &s, cpu, i as u64, busy, rt)
        }));
    }
    let (status, cpu_secs) = sys::wait_child(pid).map_err(|e| EmulateError::Io {
        what: "waitpid".into(),
        cause: e,
    })?;
    let wall_secs = t0.elapsed().as_secs_f64();
    drop(awake);
    let mut served = Served {
        counts: vec![0; multios_syscalls::MAX_NR],
        delivered: Vec::new(),
    };
    for h in handles {
        let s = h
            .join()
            .map_err(|_| EmulateError::Supervisor("a supervisor thread panicked".into()))??;
        for (a, b) in served.counts.iter_mut().zip(s.counts) {
            *a += b;
        }
        served.delivered.extend(s.delivered);
    }
    if let Some(e) = read_child_error(&err_r, &cmd) {
        return Err(e);
    }
    Ok(Outcome {
        exit: Exit::from_wait_status(status),
        wall_secs,
        cpu_secs,
        served,
        interrupted: fwd.caught(),
    })
}

fn read_child_error(err_r: &OwnedFd, cmd: &str) -> Option<EmulateError> {
    let mut b = [0u8; 4];
    // The write end is closed, so this cannot block.
    let n = sys::read(err_r.as_fd(), &mut b).ok()?;
    (n == 4).then(|| child_error(i32::from_ne_bytes(b), cmd))
}

/// How the two sides wait (see docs/EMULATOR.md, "Waiting").
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Wait {
    /// The supervisor busy-polls the listener (else it sleeps in poll until a call arrives).
    pub busy_supervisor: bool,
    /// proxy: a SCHED_IDLE thread spins on each compute CPU, so a CPU whose program waits for a
    /// delegated call never halts (on a VM, waking a halted vCPU costs
    /// tens to hundreds of µs); migrate: on each compute and control CPU, so that neither halts
    /// between the thread's moves. See `spinner.rs`.
    pub idle_spinner: bool,
    /// The supervisors run SCHED_FIFO (root only; silently normal priority otherwise), so other
    /// processes on the control CPU do not delay delegated calls.
    pub realtime: bool,
    /// The program itself runs SCHED_FIFO (below the supervisors), so that on a shared machine
    /// other processes on the compute CPU do not delay it when a delegated call returns. Applied
    /// to native comparison runs too. Off by default: it changes the program's scheduling class.
    pub app_realtime: bool,
}

/// The default, chosen by `multios fc` and the synthetic benchmark on the reference VM: a busy
/// supervisor steals cycles from the compute vCPU (the two vCPUs share host resources), so it sleeps;
/// SCHED_FIFO wakes it ahead of other processes on the control CPU; the idle spinner avoids vCPU halts.
impl Default for Wait {
    fn default() -> Self {
        Wait {
            busy_supervisor: false,
            idle_spinner: true,
            realtime: true,
            app_realtime: false,
        }
    }
}

/// SCHED_FIFO priority of the program with `app_realtime` (the supervisors use 50).
pub const APP_PRIO: i32 = 40;

/// One supervisor: pinned on `cpu`, busy-polls the listener until every filtered task is gone.
/// With `busy` the supervisor spins on the listener (the low-latency stand-in for a dedicated Linux
/// core); without it (nothing is delegated) it sleeps in poll and costs the program nothing.
fn supervise(
    fd: RawFd,
    samplers: &[Sampler],
    cpu: usize,
    seed: u64,
    busy: bool,
    realtime: bool,
) -> Result<Served, EmulateError> {
    pin_current_thread(&CpuSet([cpu].into())).map_err(|e| EmulateError::Io {
        what: format!("pinning a supervisor to CPU {cpu}"),
        cause: e,
    })?;
    if realtime {
        sys::set_fifo(50);
    }
    let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15 ^ (seed + 1).wrapping_mul(0x1234_5678_9abc_def1));
    let mut s = Served {
        counts: vec![0; multios_syscalls::MAX_NR],
        delivered: Vec::with_capacity(1 << 16),
    };
    loop {
        match sys::poll_listener(fd, if busy { 0 } else { -1 }) {
            sys::Ready::Nothing => {
                std::hint::spin_loop();
                continue;
            }
            sys::Ready::Hangup => return Ok(s),
            sys::Ready::Notif => {}
        }
        let Some(n) = sys::recv_notif(fd)
            .map_err(|e| EmulateError::Supervisor(format!("SECCOMP_IOCTL_NOTIF_RECV: {e}")))?
        else {
            continue;
        };
        let nr = n.nr.clamp(0, multios_syscalls::MAX_NR as i32 - 1) as usize;
        s.counts[nr] += 1;
        let there = samplers[nr].draw(&mut rng);
        let back = samplers[nr].draw(&mut rng);
        let t0 = tsc::now();
        let t1 = tsc::spin_until(t0, there);
        let t2 = tsc::spin_until(t1, back);
        if s.delivered.len() + 2 <= MAX_SAMPLES {
            s.delivered.push(t1 - t0);
            s.delivered.push(t2 - t1);
        }
        sys::send_continue(fd, n.id)
            .map_err(|e| EmulateError::Supervisor(format!("SECCOMP_IOCTL_NOTIF_SEND: {e}")))?;
    }
}

fn socketpair() -> Result<(OwnedFd, OwnedFd), EmulateError> {
    // A close-on-exec AF_UNIX stream pair.
    let (a, b) = std::os::unix::net::UnixStream::pair().map_err(|cause| EmulateError::Io {
        what: "socketpair".into(),
        cause,
    })?;
    Ok((a.into(), b.into()))
}

fn pipe() -> Result<(OwnedFd, OwnedFd), EmulateError> {
    multios_host::process::pipe_cloexec().map_err(|cause| EmulateError::Io {
        what: "pipe2".into(),
        cause,
    })
}
