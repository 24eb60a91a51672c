//! perf_event_open through the proxy (issue #14): the event is the host's, its ring buffer is
//! mapped into the guest like any shared mapping (`shared.rs`: the VMM maps the event fd
//! MAP_FIXED at the guest's address, and the guest reads the samples the kernel writes with no
//! copy), and its ioctls have layouts (`layout::ioctl_arg`).
//!
//! Two things differ from a process on Linux, both because guest threads and programs are the
//! VMM's: a pid of 0 or of a guest thread means the Linux thread that runs that thread's vCPU,
//! and `enable_on_exec` cannot fire (a guest execve loads the new program in the same VM; no host
//! exec happens), so an event asked for "disabled until exec" of another process — `perf record
//! -- PROG` — starts enabled at once: it also counts the child's few calls before its exec.

use crate::kernel::{lock, Kernel, Reply};
use crate::sys;

/// perf_event_attr: `size` at 4, the flag bits at 40 (disabled bit 0, inherit 1, …,
/// enable_on_exec bit 12).
const ATTR_SIZE_VER0: u64 = 64;
const ATTR_MAX: u64 = 4096;
const FLAGS: usize = 40;
const DISABLED: u64 = 1 << 0;
const ENABLE_ON_EXEC: u64 = 1 << 12;
const PERF_FLAG_PID_CGROUP: u64 = 1 << 2;
/// perf_event_attr: `type` at 0, `sample_type` at 24, `bp_addr`/`config1` at 56.
const TYPE: usize = 0;
const SAMPLE_TYPE: usize = 24;
const CONFIG1: usize = 56;
const PERF_TYPE_BREAKPOINT: u32 = 5;
/// Sample contents copied from the sampled thread's registers and memory: the sampled Linux
/// thread of a guest thread is a VMM thread (a vCPU's), and a guest that asked for its user
/// stack and registers read the VMM's stack and return addresses (callchains walk the same
/// frames; branch records, raw tracepoint data, physical addresses and AUX traces likewise
/// describe the VMM). Refused for every target: EACCES, as a kernel that forbids the sample.
const SAMPLE_CALLCHAIN: u64 = 1 << 5;
const SAMPLE_RAW: u64 = 1 << 10;
const SAMPLE_BRANCH_STACK: u64 = 1 << 11;
const SAMPLE_REGS_USER: u64 = 1 << 12;
const SAMPLE_STACK_USER: u64 = 1 << 13;
const SAMPLE_REGS_INTR: u64 = 1 << 18;
const SAMPLE_PHYS_ADDR: u64 = 1 << 19;
const SAMPLE_AUX: u64 = 1 << 20;
const SAMPLE_REFUSED: u64 = SAMPLE_CALLCHAIN
    | SAMPLE_RAW
    | SAMPLE_BRANCH_STACK
    | SAMPLE_REGS_USER
    | SAMPLE_STACK_USER
    | SAMPLE_REGS_INTR
    | SAMPLE_PHYS_ADDR
    | SAMPLE_AUX;

/// The event types the guest may open: Linux's fixed ones (hardware, software, tracepoint, cache,
/// raw, breakpoint) and the dynamic PMUs listed in sysfs when the VMM started, except kprobe and
/// uprobe, whose `config1` is a pointer the kernel reads (a function name, a path). Read once,
/// before the guest runs ([`init_pmu_types`]); anything else is refused. Until 2026-11-28 the list
/// of *refused* types was read at the first perf_event_open, by absolute path: a guest that
/// chroot'ed first (sysfs gone) had none refused, opened a uprobe on its VMM's own binary and
/// wrote an int3 byte into the VMM's code (an attacker probe, 3 of 3 runs).
fn allowed_pmu_types() -> &'static [u32] {
    static TYPES: std::sync::OnceLock<Vec<u32>> = std::sync::OnceLock::new();
    TYPES.get_or_init(|| {
        let mut types: Vec<u32> = (0..=PERF_TYPE_BREAKPOINT).collect();
        if let Ok(dir) = std::fs::read_dir("/sys/bus/event_source/devices") {
            for e in dir.flatten() {
                let name = e.file_name();
                if name == "kprobe" || name == "uprobe" {
                    continue;
                }
                let t = std::fs::read_to_string(e.path().join("type"));
                if let Some(t) = t.ok().and_then(|t| t.trim().parse::<u32>().ok()) {
                    if t > PERF_TYPE_BREAKPOINT {
                        types.push(t);
                    }
                }
            }
        }
        types.sort_unstable();
        types.dedup();
        types
    })
}

/// Reads the event types the guest may open, before the guest runs (`Kernel::new`).
pub fn init_pmu_types() {
    let _ = allowed_pmu_types();
}

impl Kernel {
    /// The arguments of perf_event_open with a pid naming the guest's own threads (0: the
    /// caller) replaced by the Linux thread running that vCPU. Other calls are unchanged.
    pub(super) fn perf_args(&self, cpu: usize, nr: u64, a: [u64; 6]) -> Result<[u64; 6], Reply> {
        if nr as i64 != libc::SYS_perf_event_open || a[4] & PERF_FLAG_PID_CGROUP != 0 {
            return Ok(a);
        }
        let pid = a[1] as i32;
        if pid < 0 {
            return Ok(a);
        }
        let Some(id) = self.vcpu_of(pid, cpu) else {
            return Ok(a);
        };
        let host = lock(&self.threads).get(id).map_or(0, |t| t.host_tid);
        if host == 0 {
            return Err(Reply::Ret(-(libc::ESRCH as i64)));
        }
        let mut b = a;
        b[1] = host as u64;
        Ok(b)
    }

    /// perf_event_open(attr, pid, cpu, group_fd, flags), its pid already translated (with
    /// PERF_FLAG_PID_CGROUP the pid argument is a cgroup directory's fd).
    pub(super) fn perf_event_open(&self, a: [u64; 6]) -> Reply {
        let attr = a[0];
        if !self.mem.user_can(attr, 8, false) {
            return Reply::Ret(-(libc::EFAULT as i64));
        }
        let mut head = [0u8; 8];
        self.mem.read(attr, &mut head);
        let size = match u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as u64 {
            0 => ATTR_SIZE_VER0,
            n => n.clamp(ATTR_SIZE_VER0, ATTR_MAX),
        };
        if !self.mem.user_can(attr, size, false) {
            return Reply::Ret(-(libc::EFAULT as i64));
        }
        let group = a[3] as i32;
        if group >= self.fd_floor || (a[4] & PERF_FLAG_PID_CGROUP != 0 && a[1] as i32 >= self.fd_floor) {
            return Reply::Ret(-(libc::EBADF as i64));
        }
        // The kernel reads a copy (nothing to swap after the check).
        let mut copy = vec![0u8; size as usize];
        self.mem.read(attr, &mut copy);
        if let Err(why) = self.perf_attr_allowed(&copy) {
            if lock(&self.reported).insert(0x3_0000_0000) {
                self.note(format!("perf_event_open: {why}; returning EACCES"));
            }
            return Reply::Ret(-(libc::EACCES as i64));
        }
        let mut flags = u64::from_le_bytes(copy[FLAGS..FLAGS + 8].try_into().unwrap_or([0; 8]));
        let other_process = a[1] as i32 > 0 && !self.is_own_host_thread(a[1] as i32);
        if flags & ENABLE_ON_EXEC != 0 && other_process {
            flags &= !(ENABLE_ON_EXEC | DISABLED);
            copy[FLAGS..FLAGS + 8].copy_from_slice(&flags.to_le_bytes());
        }
        let r = sys::raw_syscall(
            libc::SYS_perf_event_open as u64,
            [copy.as_mut_ptr() as u64, a[1], a[2], a[3], a[4], 0],
        );
        if r == -(libc::E2BIG as i64) && self.mem.user_can(attr + 4, 4, true) {
            // The kernel wrote the size it supports into the attr: so does it into the guest's.
            self.mem.write(attr + 4, &copy[4..8]);
        }
        Reply::Ret(if r >= 0 { self.limit_fd(r) } else { r })
    }

    /// Whether an event with attributes `attr` (the VMM's copy, at least the first 64 bytes) may
    /// be opened: no sample content that copies a VMM thread's registers or memory, no probe
    /// PMU (its config1 is a pointer), no breakpoint outside the guest's window.
    fn perf_attr_allowed(&self, attr: &[u8]) -> Result<(), String> {
        let word = |at: usize| u64::from_le_bytes(attr[at..at + 8].try_into().unwrap_or([0; 8]));
        let kind = word(TYPE) as u32;
        let sample = word(SAMPLE_TYPE) & SAMPLE_REFUSED;
        if sample != 0 {
            return Err(format!(
                "sample_type {sample:#x} (callchains, user or interrupt registers and stack, branch \
                 stacks, raw, physical-address or AUX data) would copy the VMM's registers and \
                 memory into the samples"
            ));
        }
        if !allowed_pmu_types().contains(&kind) {
            return Err(format!(
                "event type {kind} is not one of Linux's fixed types or a PMU listed in sysfs at \
                 start-up other than kprobe/uprobe (whose config1 points into memory)"
            ));
        }
        if kind == PERF_TYPE_BREAKPOINT && !self.mem.in_app(word(CONFIG1), 1) {
            return Err(format!(
                "a breakpoint at {:#x}, outside the guest's memory",
                word(CONFIG1)
            ));
        }
        Ok(())
    }

    /// True when `tid` is a Linux thread running one of this guest's vCPUs.
    fn is_own_host_thread(&self, tid: i32) -> bool {
        lock(&self.threads).iter().any(|t| t.alive && t.host_tid == tid)
    }
}
