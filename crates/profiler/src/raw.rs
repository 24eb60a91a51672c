//! What a backend collects, before it becomes a [`multios_profile::Profile`].

/// Per system call number: n(s), g(s) in ns and the distribution of per-call times.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawCall {
    pub nr: u32,
    pub count: u64,
    pub total_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub errors: u64,
    /// Log2 buckets of per-call ns (bucket k: [2^k, 2^(k+1))).
    pub hist: Vec<u64>,
    /// Log2 buckets of the ns between the calling thread's previous call's return and each call
    /// (its first call: since the thread started); empty when the backend does not record them.
    pub gaps: Vec<u64>,
}

impl RawCall {
    /// Adds one call of `ns` (already corrected).
    pub fn record(&mut self, ns: u64, error: bool) {
        if self.count == 0 || ns < self.min_ns {
            self.min_ns = ns;
        }
        self.max_ns = self.max_ns.max(ns);
        self.count += 1;
        self.total_ns += ns;
        self.errors += u64::from(error);
        let b = multios_profile::Log2Histogram::bucket_of(ns);
        if self.hist.len() <= b {
            self.hist.resize(b + 1, 0);
        }
        self.hist[b] += 1;
    }

    /// Adds another CPU's (or process's) statistics for the same call.
    pub fn merge(&mut self, o: &RawCall) {
        if o.count == 0 {
            return;
        }
        if self.count == 0 || o.min_ns < self.min_ns {
            self.min_ns = o.min_ns;
        }
        self.max_ns = self.max_ns.max(o.max_ns);
        self.count += o.count;
        self.total_ns += o.total_ns;
        self.errors += o.errors;
        if self.hist.len() < o.hist.len() {
            self.hist.resize(o.hist.len(), 0);
        }
        for (a, b) in self.hist.iter_mut().zip(&o.hist) {
            *a += b;
        }
        if self.gaps.len() < o.gaps.len() {
            self.gaps.resize(o.gaps.len(), 0);
        }
        for (a, b) in self.gaps.iter_mut().zip(&o.gaps) {
            *a += b;
        }
    }
}

/// One traced thread (times on CLOCK_MONOTONIC, ns).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawThread {
    pub tid: u32,
    pub tgid: u32,
    /// The process that forked it (its own `tgid` for a thread); 0 when not known (the root).
    pub ptgid: u32,
    /// Its command name when it ended (empty when not known).
    pub comm: String,
    pub start_ns: u64,
    pub end_ns: u64,
    pub calls: u64,
    pub syscall_ns: u64,
    /// The wait(2) status it exited with (the eBPF backend's exited tasks; `None` otherwise): the
    /// last one of a process's leader tid is how the process ended.
    pub exit_status: Option<i32>,
}

/// One process's calls of one number: n and g in ns (`--per-process`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawProcCall {
    pub tgid: u32,
    pub nr: u32,
    pub count: u64,
    pub total_ns: u64,
}

/// One exec of a traced process (the eBPF backend): the file the kernel ran, as the exec named
/// it (a script's interpreter for a `#!` script), its inode and size then.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawExec {
    pub tgid: u32,
    pub ns: u64,
    pub path: String,
    pub ino: u64,
    pub size: u64,
}

/// One process's executable file mappings: calls and Σ length (`--per-process`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RawCode {
    pub tgid: u32,
    pub calls: u64,
    pub bytes: u64,
}

/// Everything one run collected.
#[derive(Debug, Clone, Default)]
pub struct Raw {
    pub calls: Vec<RawCall>,
    pub threads: Vec<RawThread>,
    /// Per process and number (empty unless the run was profiled per process).
    pub proc_calls: Vec<RawProcCall>,
    /// Σ of the lengths the memory calls asked for: mmap, munmap, mremap's old and new length,
    /// then the file-backed mmaps' count and Σ length (the eBPF backend; `None` where the backend
    /// does not record them).
    pub mem_bytes: Option<[u64; 6]>,
    /// The traced processes' execs (the eBPF backend), in time order.
    pub execs: Vec<RawExec>,
    /// Per process, its executable file mappings (the eBPF backend with `--per-process`).
    pub code: Vec<RawCode>,
    /// Per process, its new anonymous ranges by length (`--per-process`, both backends).
    pub anon: Vec<RawAnon>,
}

/// One process's new anonymous ranges: what the LWK populates at map time (`--per-process`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawAnon {
    pub tgid: u32,
    pub maps: multios_profile::AnonMaps,
}
