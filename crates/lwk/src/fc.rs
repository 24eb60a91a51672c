//! Measuring the delegation round trip (f_c) from inside the guest: a tiny guest program times
//! N system calls with rdtsc, the VMM turns cycles into ns and reports min/median/p99.

use crate::config::{Backend, Config};
use crate::kernel::Kernel;
use crate::loader::elf::Image;
use crate::loader::Symbols;
use crate::machine::drive;
use crate::memory::{GuestMemory, APP_BASE};
use crate::mm::Mm;
use crate::outcome::LwkError;
use crate::policy::LocalSet;
use crate::vcpu::Entry;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The guest loop (hand-assembled; patched: count at 9, buffer at 15, syscall number at 0x24):
///
/// ```text
///      mov $0x1002,%edi; xor %esi,%esi                     (arguments of arch_prctl(SET_FS, 0))
///      mov $N,%r12d; movabs $BUF,%r13
///  1:  rdtsc; shl $32,%rdx; or %rdx,%rax; mov %rax,%r14
///      mov $NR,%eax; syscall                             (the pattern the loader rewrites by default)
///      rdtsc; shl $32,%rdx; or %rdx,%rax; sub %r14,%rax
///      mov %rax,(%r13); add $8,%r13; dec %r12d; jnz 1b
///      mov $231,%eax; xor %edi,%edi; syscall              exit_group(0)
/// ```
const LOOP: [u8; 76] = [
    0xbf, 0x02, 0x10, 0x00, 0x00, 0x31, 0xf6, 0x41, 0xbc, 0x44, 0x33, 0x22, 0x11, 0x49, 0xbd, 0x88, //
    0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x0f, 0x31, 0x48, 0xc1, 0xe2, 0x20, 0x48, 0x09, 0xd0, //
    0x49, 0x89, 0xc6, 0xb8, 0x88, 0x77, 0x66, 0x55, 0x0f, 0x05, 0x0f, 0x31, 0x48, 0xc1, 0xe2, 0x20, //
    0x48, 0x09, 0xd0, 0x4c, 0x29, 0xf0, 0x49, 0x89, 0x45, 0x00, 0x49, 0x83, 0xc5, 0x08, 0x41, 0xff, //
    0xcc, 0x75, 0xd4, 0xb8, 0xe7, 0x00, 0x00, 0x00, 0x31, 0xff, 0x0f, 0x05,
];

/// What is timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    /// getppid on the host, no VM: the reference.
    Native,
    /// arch_prctl(SET_FS) answered by the stub itself in guest ring 3 (wrfsbase): the cost of the
    /// `syscall` instruction reaching LSTAR on this KVM, the floor under every other guest row.
    TrapOnly,
    /// getpid served by the LWK in the VMM through the ring (no host system call).
    RingLocal,
    /// getppid delegated through the ring: checked and performed by the proxy.
    RingDelegated,
    /// getppid delegated through the doorbell (MMIO exit), no proxy.
    ExitDelegated,
    /// getpid served by the LWK, the `syscall` site rewritten to jump to the stub (no trap).
    RewrittenLocal,
    /// getppid delegated through the ring, the site rewritten (no trap).
    RewrittenDelegated,
}

impl Mechanism {
    pub const ALL: [Mechanism; 7] = [
        Mechanism::Native,
        Mechanism::TrapOnly,
        Mechanism::RingLocal,
        Mechanism::RingDelegated,
        Mechanism::ExitDelegated,
        Mechanism::RewrittenLocal,
        Mechanism::RewrittenDelegated,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Native => "native getppid (host)",
            Mechanism::TrapOnly => "guest syscall→LSTAR stub→return",
            Mechanism::RingLocal => "LWK-local getpid via ring",
            Mechanism::RingDelegated => "delegated getppid via ring",
            Mechanism::ExitDelegated => "delegated getppid via MMIO exit",
            Mechanism::RewrittenLocal => "LWK-local getpid, rewritten site",
            Mechanism::RewrittenDelegated => "delegated getppid, rewritten site",
        }
    }
}

/// Per-call times in ns.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Summary {
    pub calls: usize,
    pub min_ns: f64,
    pub median_ns: f64,
    pub p99_ns: f64,
    pub mean_ns: f64,
}

impl Summary {
    /// Summarises `v` with multios-stats' rules (the averaged middle, interpolated p99); all zeros
    /// when empty.
    pub fn of(mut v: Vec<f64>) -> Self {
        if v.is_empty() {
            return Summary::default();
        }
        v.sort_by(f64::total_cmp);
        Summary {
            calls: v.len(),
            min_ns: v[0],
            median_ns: multios_stats::median_sorted(&v),
            p99_ns: multios_stats::quantile(&v, 0.99),
            mean_ns: v.iter().sum::<f64>() / v.len() as f64,
        }
    }
}

use multios_host::tsc::now as rdtsc;

/// TSC ticks per ns, measured against the monotonic clock over `d` (three windows of `d` / 3).
pub fn tsc_per_ns(d: Duration) -> f64 {
    multios_host::tsc::calibrate(d / 3).ticks_per_ns()
}

/// Times `calls` system calls through `mech`, pinned like `multios lwk run` (the default
/// partition: the proxy on the CPU that takes the device interrupts, vCPU 0 on the first other)
/// when `pin`.
pub fn measure(mech: Mechanism, calls: u32, pin: bool) -> Result<Summary, LwkError> {
    let per_ns = tsc_per_ns(Duration::from_millis(20));
    if mech == Mechanism::Native {
        let saved = crate::sys::affinity();
        if pin {
            let (_, lwk) = crate::config::default_partition(&crate::sys::affinity_list());
            let _ = crate::sys::pin_to_cpu(lwk.first().copied().unwrap_or(0));
        }
        let mut v = Vec::with_capacity(calls as usize);
        for _ in 0..calls {
            let c0 = rdtsc();
            crate::sys::raw_syscall(libc::SYS_getppid as u64, [0; 6]);
            v.push((rdtsc() - c0) as f64 / per_ns);
        }
        if let Some(a) = &saved {
            crate::sys::set_affinity(a);
        }
        return Ok(Summary::of(v));
    }
    let mem = Arc::new(GuestMemory::new(64 << 20)?);
    mem.map_whole_window();
    let buf = APP_BASE + (1 << 20);
    let calls = calls.min(((mem.app.end() - buf - (16 << 20)) / 8) as u32);
    let nr = if mech == Mechanism::RingLocal {
        libc::SYS_getpid
    } else {
        libc::SYS_getppid
    } as u32;
    let mut code = LOOP;
    code[9..13].copy_from_slice(&calls.to_le_bytes());
    code[15..23].copy_from_slice(&buf.to_le_bytes());
    code[0x24..0x28].copy_from_slice(&nr.to_le_bytes());
    mem.write(APP_BASE, &code);
    if matches!(mech, Mechanism::RewrittenLocal | Mechanism::RewrittenDelegated) {
        let mut thunks = crate::rewrite::Thunks::new(&mem);
        crate::rewrite::rewrite(&mem, &mut thunks, APP_BASE, code.len() as u64);
    }
    let mut cfg = Config::new("fc", &[]);
    cfg.quiet = true;
    cfg.policy = LocalSet::from_names("fc", BTreeSet::from(["getpid".to_string()]));
    if mech == Mechanism::ExitDelegated {
        cfg.backend = Backend::Exit;
    } else if !pin {
        cfg.backend = Backend::Ring { proxy_cpu: None };
        cfg.cpus.clear();
    }
    let mm = Mm::new(mem.app.base, mem.app.end(), buf + 8 * calls as u64);
    let kernel = Arc::new(Kernel::new(
        mem.clone(),
        mm,
        cfg.policy.clone(),
        b"fc".to_vec(),
        crate::fds::floor(),
        true,
    ));
    let entry = Entry {
        rip: APP_BASE,
        rsp: mem.app.end() - 4096,
        ..Default::default()
    };
    let symbols = Symbols {
        main: Image::default(),
        interp: None,
    };
    drive(
        &cfg,
        mem.clone(),
        kernel,
        entry,
        symbols,
        crate::costs::Phases::new(Instant::now()),
        None,
    )?;
    let v = (0..calls as u64)
        .map(|i| mem.read_u64(buf + 8 * i) as f64 / per_ns)
        .collect();
    Ok(Summary::of(v))
}

#[cfg(test)]
mod tests {
    use super::Summary;

    #[test]
    fn issue_17_summary_follows_multios_stats() {
        let s = Summary::of(vec![4.0, 1.0, 3.0, 2.0]);
        assert_eq!(s.calls, 4);
        assert_eq!(s.min_ns, 1.0);
        // The averaged middle (was the upper middle, 3.0).
        assert_eq!(s.median_ns, 2.5);
        // Interpolated: 3 + 0.97 (was the nearest rank, 4.0).
        assert!((s.p99_ns - 3.97).abs() < 1e-12, "{}", s.p99_ns);
        assert_eq!(s.mean_ns, 2.5);
        let empty = Summary::of(Vec::new());
        assert_eq!((empty.calls, empty.median_ns), (0, 0.0));
    }
}
