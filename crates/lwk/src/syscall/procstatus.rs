//! The guest's own `/proc/self/status` and `/proc/self/stat` (issue #16): the kernel's text for
//! the VMM process, with the fields that describe the guest put back — its thread count, its
//! signal state (pending, blocked, ignored, caught), its address space's sizes (from the LWK's
//! view, `vmas.rs`: the VMM's 4 GiB window and its own mappings are not the guest's) and, in
//! `stat`, its CPU times (`guestcpu.rs`, as getrusage answers them). Before, a single-threaded
//! guest read `Threads: 4`, the VMM's signal masks and a `VmSize` of 4.3 GB.
//!
//! Left as the host's: the resident-set fields (they count the guest's memory, which is the
//! VMM's, and the VMM's few MiB), context switches, `Cpus_allowed` (the vCPU thread's pinning,
//! which is what the guest's sched_getaffinity answers too) and ids.

use crate::kernel::{lock, Kernel};
use crate::vmas::Vma;

/// Linux's USER_HZ on x86-64: `stat`'s times count in hundredths of a second.
const USER_HZ: u64 = 100;

/// Address-space sizes in bytes, as Linux counts them for `status` (mm/util.c, fs/proc/task_mmu.c).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct VmSizes {
    pub total: u64,
    /// Private writable memory other than the stack (VM_WRITE & ~VM_SHARED & ~VM_STACK).
    pub data: u64,
    pub stack: u64,
    /// Executable, not writable: the program's own (`exe`) and the rest (libraries).
    pub exe: u64,
    pub lib: u64,
}

/// What the guest's `status` and `stat` say about it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct GuestFacts {
    pub threads: usize,
    /// Signal sets (bit sig-1): the thread's own pending, the process's pending, the thread's mask.
    pub thread_pending: u64,
    pub shared_pending: u64,
    pub blocked: u64,
    pub ignored: u64,
    pub caught: u64,
    pub vm: VmSizes,
    /// The largest `vm.total` reported so far (Linux's hiwater_vm, as far as the LWK saw it).
    pub vm_peak: u64,
    /// The fd table's size (Linux's `max_fds`) for the guest's highest descriptor.
    pub fd_size: Option<u64>,
    /// User and system time, ns (None: leave the host's, a task's own times).
    pub times: Option<(u64, u64)>,
    /// Where the guest's heap starts (`stat`'s start_brk; the VMM's put its load address within
    /// the 32 MiB of brk randomisation).
    pub start_brk: u64,
}

/// The sizes of the areas of the guest's maps; `exe` is the program's path.
pub(crate) fn vm_sizes(areas: &[(u64, Vma)], exe: &str) -> VmSizes {
    let mut s = VmSizes::default();
    for (start, v) in areas {
        let len = v.end - start;
        s.total += len;
        let write = v.prot & libc::PROT_WRITE != 0;
        if v.name == "[stack]" {
            s.stack += len;
        } else if write && !v.shared {
            s.data += len;
        } else if v.prot & libc::PROT_EXEC != 0 && !write {
            if !exe.is_empty() && v.name == exe {
                s.exe += len;
            } else {
                s.lib += len;
            }
        }
    }
    s
}

/// Linux's fd table size holding descriptor `highest` (fs/file.c: 64 in the task itself, then
/// power-of-two multiples of 128 as it grows).
pub(crate) fn fd_table_size(highest: u64) -> u64 {
    if highest < 64 {
        64
    } else {
        128 * (highest / 128 + 1).next_power_of_two()
    }
}

/// `real` (a `status` text) with the guest's fields.
pub(crate) fn patch_status(real: &str, f: &GuestFacts) -> String {
    let kb = |b: u64| format!("{:8} kB", b / 1024);
    let mut out = String::with_capacity(real.len());
    for line in real.lines() {
        let (key, _) = line.split_once(':').unwrap_or((line, ""));
        let value = match key {
            "Threads" => Some(f.threads.to_string()),
            "SigPnd" => Some(format!("{:016x}", f.thread_pending)),
            "ShdPnd" => Some(format!("{:016x}", f.shared_pending)),
            "SigBlk" => Some(format!("{:016x}", f.blocked)),
            "SigIgn" => Some(format!("{:016x}", f.ignored)),
            "SigCgt" => Some(format!("{:016x}", f.caught)),
            "VmPeak" => Some(kb(f.vm_peak.max(f.vm.total))),
            "VmSize" => Some(kb(f.vm.total)),
            "VmData" => Some(kb(f.vm.data)),
            "VmStk" => Some(kb(f.vm.stack)),
            "VmExe" => Some(kb(f.vm.exe)),
            "VmLib" => Some(kb(f.vm.lib)),
            "FDSize" => f.fd_size.map(|n| n.to_string()),
            _ => None,
        };
        match value {
            Some(v) => {
                out.push_str(key);
                out.push_str(":\t");
                out.push_str(&v);
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// `real` (a `stat` line) with the guest's fields: utime and stime (14, 15), num_threads (20),
/// vsize (23), the signal sets (31–34, in Linux's obsolete form) and start_brk (47). The command name (2) may hold spaces and
/// parentheses: the fields are counted after its last `)`. A text that does not parse is kept.
pub(crate) fn patch_stat(real: &str, f: &GuestFacts) -> String {
    let Some(close) = real.rfind(')') else {
        return real.to_string();
    };
    let (head, tail) = real.split_at(close + 1);
    let mut fields: Vec<String> = tail.split_whitespace().map(str::to_string).collect();
    if fields.len() < 45 {
        return real.to_string();
    }
    // fields[0] is field 3 (state).
    let mut set = |n: usize, v: u64| fields[n - 3] = v.to_string();
    if let Some((user, system)) = f.times {
        let tick = 1_000_000_000 / USER_HZ;
        set(14, user / tick);
        set(15, system / tick);
    }
    set(20, f.threads as u64);
    set(23, f.vm.total);
    // Linux prints these obsolete sets as it did in 2.0: the first 31 signals, the thread's own
    // pending set only (fs/proc/array.c, do_task_stat).
    const OLD: u64 = 0x7fff_ffff;
    set(31, f.thread_pending & OLD);
    set(32, f.blocked & OLD);
    set(33, f.ignored & OLD);
    set(34, f.caught & OLD);
    if f.start_brk != 0 {
        set(47, f.start_brk);
    }
    format!("{head} {}\n", fields.join(" "))
}

impl Kernel {
    /// The guest's facts for its `status` or `stat`; `task` is the host thread the file is of
    /// (None: the process, whose per-thread fields are its first live thread's).
    pub(super) fn guest_facts(&self, task: Option<i32>) -> GuestFacts {
        let threads = lock(&self.threads);
        let me = task
            .and_then(|t| threads.iter().find(|i| i.alive && i.host_tid == t))
            .or_else(|| threads.iter().find(|i| i.alive));
        let (thread_pending, blocked) = me.map_or((0, 0), |t| (t.sig.pending.set, t.sig.mask));
        let live = threads.iter().filter(|t| t.alive).count();
        drop(threads);
        let shared_pending = lock(&self.signals.pending).set;
        let (mut ignored, mut caught) = (0u64, 0u64);
        for (sig, act) in lock(&self.signals.actions).iter().enumerate().skip(1) {
            match act.raw[0] {
                0 => {}
                1 => ignored |= 1 << (sig - 1),
                _ => caught |= 1 << (sig - 1),
            }
        }
        let exe = String::from_utf8_lossy(&lock(&self.program.exe)).into_owned();
        let (vm, start_brk) = {
            let mm = lock(&self.space.mm);
            let areas = lock(&self.space.vmas).areas(&mm);
            (vm_sizes(&areas, &exe), mm.brk_start)
        };
        let vm_peak = self
            .vm_peak
            .fetch_max(vm.total, std::sync::atomic::Ordering::AcqRel)
            .max(vm.total);
        let fd_size = crate::procfs::highest_guest_fd(self.fd_floor).map(|h| {
            let size = fd_table_size(h);
            self.fd_table_seen
                .fetch_max(size, std::sync::atomic::Ordering::AcqRel)
                .max(size)
        });
        GuestFacts {
            threads: live.max(1),
            thread_pending,
            shared_pending,
            blocked,
            ignored,
            caught,
            vm,
            vm_peak,
            fd_size,
            times: task.is_none().then(|| self.guest_cpu.user_system()),
            start_brk,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATUS: &str = "Name:\tcat\nUmask:\t0022\nState:\tR (running)\nFDSize:\t32768\n\
VmPeak:\t 4416488 kB\nVmSize:\t 4350964 kB\nVmRSS:\t    6752 kB\nVmData:\t 4213504 kB\nVmStk:\t     132 kB\n\
VmExe:\t      20 kB\nVmLib:\t    3136 kB\nThreads:\t4\nSigQ:\t0/95734\nSigPnd:\t0000000000000000\n\
ShdPnd:\t0000000000000000\nSigBlk:\tfffffffe7ffbe227\nSigIgn:\t0000000000001000\nSigCgt:\tffffffff7780eeff\n\
Cpus_allowed:\t1\n";

    fn facts() -> GuestFacts {
        GuestFacts {
            threads: 1,
            thread_pending: 0,
            shared_pending: 1 << 9,
            blocked: 1 << 1,
            ignored: 1 << 12,
            caught: (1 << 10) | (1 << 32),
            vm: VmSizes {
                total: 3060 * 1024,
                data: 360 * 1024,
                stack: 132 * 1024,
                exe: 20 * 1024,
                lib: 1528 * 1024,
            },
            vm_peak: 0,
            fd_size: Some(64),
            times: Some((2_000_000_000, 30_000_000)),
            start_brk: 0x40_5000,
        }
    }

    #[test]
    fn status_fields_describe_the_guest_and_the_rest_is_kept() {
        let out = patch_status(STATUS, &facts());
        for want in [
            "Threads:\t1\n",
            "FDSize:\t64\n",
            "VmPeak:\t    3060 kB\n",
            "VmSize:\t    3060 kB\n",
            "VmData:\t     360 kB\n",
            "VmLib:\t    1528 kB\n",
            "ShdPnd:\t0000000000000200\n",
            "SigBlk:\t0000000000000002\n",
            "SigIgn:\t0000000000001000\n",
            "SigCgt:\t0000000100000400\n",
            "VmRSS:\t    6752 kB\n",
            "Cpus_allowed:\t1\n",
            "Name:\tcat\n",
        ] {
            assert!(out.contains(want), "{want:?} not in\n{out}");
        }
        assert_eq!(out.lines().count(), STATUS.lines().count());
    }

    #[test]
    fn stat_fields_are_counted_after_the_last_parenthesis() {
        let real = "77 (a) b) c) R 1 77 77 0 -1 4194305 830 0 1 0 1 1 0 0 20 0 5 0 6902498 4524613632 1574 \
18446744073709551615 4198400 4202496 4299159616 0 0 0 2147213863 4096 2004938495 0 0 0 17 0 0 0 0 0 0 \
4206592 4214784 94183707992064 4299160264 4299160271 4299160271 4299161585 0\n";
        let out = patch_stat(real, &facts());
        let tail: Vec<&str> = out[out.rfind(')').expect("a stat line") + 1..]
            .split_whitespace()
            .collect();
        let field = |n: usize| tail[n - 3];
        assert_eq!((field(14), field(15)), ("200", "3"));
        assert_eq!(field(20), "1");
        assert_eq!(field(23), (3060 * 1024).to_string());
        assert_eq!(field(31), "0"); // the thread's own pending set only
        assert_eq!((field(32), field(33), field(34)), ("2", "4096", "1024"));
        assert_eq!(field(47), (0x40_5000).to_string());
        assert!(out.starts_with("77 (a) b) c) R 1 77"), "{out}");
        assert_eq!(
            tail.len(),
            real[real.rfind(')').expect("a stat line") + 1..]
                .split_whitespace()
                .count()
        );
        assert_eq!(patch_stat("garbage", &facts()), "garbage");
    }

    #[test]
    fn fd_table_sizes_grow_as_linuxs() {
        assert_eq!(fd_table_size(2), 64);
        assert_eq!(fd_table_size(63), 64);
        assert_eq!(fd_table_size(64), 128);
        assert_eq!(fd_table_size(255), 256);
        assert_eq!(fd_table_size(256), 512);
        assert_eq!(fd_table_size(1000), 1024);
    }

    #[test]
    fn sizes_split_as_linux_counts_them() {
        let v = |end, prot, shared, name: &str| Vma {
            end,
            prot,
            shared,
            name: name.into(),
            ..Vma::default()
        };
        let (r, w, x) = (libc::PROT_READ, libc::PROT_WRITE, libc::PROT_EXEC);
        let areas = vec![
            (0x1000, v(0x3000, r | x, false, "/bin/p")),
            (0x3000, v(0x4000, r | w, false, "/bin/p")),
            (0x10000, v(0x14000, r | x, false, "/lib/libc.so")),
            (0x20000, v(0x21000, r | w, true, "")),
            (0x30000, v(0x38000, r | w, false, "[stack]")),
        ];
        let s = vm_sizes(&areas, "/bin/p");
        assert_eq!(
            s,
            VmSizes {
                total: 0x2000 + 0x1000 + 0x4000 + 0x1000 + 0x8000,
                data: 0x1000,
                stack: 0x8000,
                exe: 0x2000,
                lib: 0x4000,
            }
        );
    }
}
