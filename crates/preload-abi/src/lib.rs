//! The configuration block `multios emulate` hands to its preload library
//! (`crates/emulate/csrc/preload.c`): one versioned `#[repr(C)]` struct, [`Config`], followed by a
//! trailing area of `u64` cost samples, written to a file whose path the library finds in
//! `MULTIOS_EMU_CONFIG`. The C side reads the same layout through
//! `include/multios_preload_abi.h` (its directory reaches dependent build scripts as
//! `DEP_MULTIOS_PRELOAD_ABI_INCLUDE`); `tests/c_layout.rs` compiles a C program against that
//! header and checks every field's offset and size, and every constant, against this file.
//!
//! Like `multios-lwk-abi` this crate is deliberately small: any change of [`Config`], [`Cost`] or
//! of a constant's meaning bumps [`VERSION`]. The library refuses a block whose magic, version or
//! size differ from its own: it says so on stderr, writes the reason to `FILE.rejected` (FILE
//! being the block's path) and exits with [`REJECT_EXIT`] before the program runs.

use core::mem::size_of;

/// First four bytes of every block: "MOSP" (multios preload) read as a little-endian `u32`.
pub const MAGIC: u32 = u32::from_le_bytes(*b"MOSP");
/// Version of this ABI; bump on any change of the layout or of a constant's meaning.
pub const VERSION: u32 = 3;
/// System call numbers the tables cover: `0..NR_MAX`.
pub const NR_MAX: usize = 512;
/// Words of a CPU mask (`u64` each, CPU `c` is bit `c % 64` of word `c / 64`): the layout of
/// glibc's `cpu_set_t` on x86_64, 1024 CPUs.
pub const CPU_WORDS: usize = 16;
/// CPUs a mask can name: `0..MAX_CPUS`.
pub const MAX_CPUS: usize = CPU_WORDS * 64;
/// Bytes of a directory path in the block (statistics, rewrite cache), its terminating NUL
/// included.
pub const PATH_MAX: usize = 512;
/// Exit status of a program whose preload library refused the block.
pub const REJECT_EXIT: i32 = 121;
/// Appended to the block's path to name the file where the library writes why it refused it.
pub const REJECTED_SUFFIX: &str = ".rejected";

/// [`Config::mode`]: how delegated calls are served.
pub mod mode {
    /// The thread migrates to the control CPUs for the call.
    pub const MIGRATE: u32 = 0;
    /// The thread's delegate thread on the control CPUs makes the call (shared-memory mailbox).
    pub const SHM: u32 = 1;
}

/// [`Config::intercept`]: how system-call sites are found.
pub mod intercept {
    /// Through Syscall User Dispatch, each site rewritten on its first call.
    pub const LAZY: u32 = 0;
    /// Every site rewritten at start-up.
    pub const EAGER: u32 = 1;
}

/// [`Cost::kind`]: the distribution of a delegated call's forwarding cost.
pub mod cost_kind {
    /// `param` ticks every time.
    pub const CONSTANT: u32 = 0;
    /// Exponentially distributed with mean `param` ticks.
    pub const EXPONENTIAL: u32 = 1;
    /// Drawn from `nsamples` tick counts in the trailing area.
    pub const SAMPLES: u32 = 2;
}

/// The forwarding cost of one delegated system call, in TSC ticks.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Cost {
    /// One of [`cost_kind`].
    pub kind: u32,
    /// Reserved (0).
    pub reserved: u32,
    /// Ticks (constant) or mean ticks (exponential); 0 for samples.
    pub param: u64,
    /// Samples: byte offset of the first sample from the start of the block (8-aligned, at or
    /// after `size_of::<Config>()`).
    pub samples: u64,
    /// Samples: how many `u64` tick counts start at `samples`.
    pub nsamples: u64,
}

/// The block's fixed part. Flags are `u32` 0 or 1, so that the struct has no padding.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// [`MAGIC`].
    pub magic: u32,
    /// [`VERSION`].
    pub version: u32,
    /// `size_of::<Config>()`.
    pub size: u32,
    /// One of [`mode`].
    pub mode: u32,
    /// Bytes of the whole block: this struct and the trailing samples.
    pub total: u64,
    /// One of [`intercept`].
    pub intercept: u32,
    /// 1: the trampoline times every local call it makes (`profile --backend inproc`).
    pub timing: u32,
    /// 1: rewrite `syscall` sites into calls to the trampoline.
    pub rewrite: u32,
    /// 1: SCHED_FIFO delegate threads.
    pub realtime: u32,
    /// Ticks an idle shm delegate spins before it sleeps.
    pub idle_ticks: u64,
    /// Ticks a caller spins on its mailbox before it sleeps until the reply.
    pub patience_ticks: u64,
    /// Ticks between an idle shm delegate's exits to the hypervisor; 0: none (version 3). On a VM
    /// an IPI for a CPU busy running code arrives only at that CPU's next exit, so the program's
    /// TLB flushes waited milliseconds for a delegate spinning beside it (`multios_host::hvexit`).
    pub hv_exit_ticks: u64,
    /// The compute CPUs (mask, see [`CPU_WORDS`]).
    pub compute: [u64; CPU_WORDS],
    /// The control CPUs.
    pub control: [u64; CPU_WORDS],
    /// The statistics directory, NUL-terminated.
    pub stats_dir: [u8; PATH_MAX],
    /// The rewrite cache's directory, NUL-terminated; empty: no cache (version 2). The eager
    /// interception keeps there, per executable mapping of a file (its device, inode, size,
    /// times, offset and length), the sites it found to be `syscall` instructions, so that the
    /// next exec of the same file patches them without scanning and decoding it again.
    pub rewrite_cache: [u8; PATH_MAX],
    /// 1: the call runs at a local stub in the program's own context.
    pub local_stub: [u8; NR_MAX],
    /// 1: the call is delegated, at the cost `costs[nr]`.
    pub delegated: [u8; NR_MAX],
    /// Forwarding cost of each delegated call.
    pub costs: [Cost; NR_MAX],
}

/// The struct has no padding: [`Config::encode`] writes its fields back to back.
const _: () = assert!(
    size_of::<Config>()
        == 4 * 4
            + 8
            + 4 * 4
            + 8 * 3
            + 8 * CPU_WORDS * 2
            + PATH_MAX * 2
            + NR_MAX * 2
            + size_of::<Cost>() * NR_MAX
);
const _: () = assert!(size_of::<Cost>() == 32);

impl Config {
    /// A block with its magic, version and size set and everything else 0: nothing delegated.
    pub fn new() -> Config {
        Config {
            magic: MAGIC,
            version: VERSION,
            size: size_of::<Config>() as u32,
            mode: mode::MIGRATE,
            total: size_of::<Config>() as u64,
            intercept: intercept::LAZY,
            timing: 0,
            rewrite: 0,
            realtime: 0,
            idle_ticks: 0,
            patience_ticks: 0,
            hv_exit_ticks: 0,
            compute: [0; CPU_WORDS],
            control: [0; CPU_WORDS],
            stats_dir: [0; PATH_MAX],
            rewrite_cache: [0; PATH_MAX],
            local_stub: [0; NR_MAX],
            delegated: [0; NR_MAX],
            costs: [Cost::default(); NR_MAX],
        }
    }

    /// Appends the struct's bytes, field by field in declaration order (no padding, see the
    /// assertion above), so that each lands at its `offset_of!`.
    fn encode(&self, out: &mut Vec<u8>) {
        for w in [self.magic, self.version, self.size, self.mode] {
            out.extend_from_slice(&w.to_ne_bytes());
        }
        out.extend_from_slice(&self.total.to_ne_bytes());
        for w in [self.intercept, self.timing, self.rewrite, self.realtime] {
            out.extend_from_slice(&w.to_ne_bytes());
        }
        let words = [self.idle_ticks, self.patience_ticks, self.hv_exit_ticks].into_iter();
        for w in words.chain(self.compute).chain(self.control) {
            out.extend_from_slice(&w.to_ne_bytes());
        }
        out.extend_from_slice(&self.stats_dir);
        out.extend_from_slice(&self.rewrite_cache);
        out.extend_from_slice(&self.local_stub);
        out.extend_from_slice(&self.delegated);
        for c in &self.costs {
            out.extend_from_slice(&c.kind.to_ne_bytes());
            out.extend_from_slice(&c.reserved.to_ne_bytes());
            for w in [c.param, c.samples, c.nsamples] {
                out.extend_from_slice(&w.to_ne_bytes());
            }
        }
    }
}

/// `path` as a NUL-terminated field of the block (`what` and `fix` for the error).
fn path_field(what: &'static str, fix: &'static str, path: &[u8]) -> Result<[u8; PATH_MAX], BlockError> {
    let shown = || String::from_utf8_lossy(path).into_owned();
    if path.contains(&0) {
        return Err(BlockError::PathNul { what, path: shown() });
    }
    if path.len() >= PATH_MAX {
        return Err(BlockError::PathTooLong {
            what,
            path: shown(),
            len: path.len(),
            fix,
        });
    }
    let mut field = [0; PATH_MAX];
    field[..path.len()].copy_from_slice(path);
    Ok(field)
}

impl Default for Config {
    fn default() -> Self {
        Config::new()
    }
}

/// What a block cannot hold.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BlockError {
    #[error("CPU {cpu}: the preload library's CPU masks hold CPUs 0-{} only; choose CPUs below {MAX_CPUS}", MAX_CPUS - 1)]
    Cpu { cpu: usize },
    #[error(
        "{what} '{path}': {len} bytes, the preload library takes at most {} ({fix})",
        PATH_MAX - 1
    )]
    PathTooLong {
        what: &'static str,
        path: String,
        len: usize,
        fix: &'static str,
    },
    #[error("{what} '{path}' contains a NUL byte")]
    PathNul { what: &'static str, path: String },
    #[error("system call number {nr}: the preload library's tables stop at {}", NR_MAX - 1)]
    Nr { nr: usize },
    #[error("{what}: the block is {len} bytes, shorter than its header ({need})")]
    Short { what: String, len: usize, need: usize },
    #[error("{what}: magic {found:#010x}, expected {MAGIC:#010x} (not a multios preload configuration)")]
    Magic { what: String, found: u32 },
    #[error("{what}: version {found}, this build reads version {VERSION}")]
    Version { what: String, found: u32 },
    #[error("{what}: header size {found}, this build's is {}", size_of::<Config>())]
    Size { what: String, found: u32 },
}

/// Which CPU mask [`Block::set_cpus`] fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cpus {
    Compute,
    Control,
}

/// A delegated call's forwarding cost, in TSC ticks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delegated {
    Constant(u64),
    Exponential(u64),
    Samples(Vec<u64>),
}

/// A block being built: the fixed part and the trailing samples.
#[derive(Debug, Clone)]
pub struct Block {
    config: Box<Config>,
    samples: Vec<u64>,
}

impl Default for Block {
    fn default() -> Self {
        Block::new()
    }
}

impl Block {
    /// An empty block ([`Config::new`]).
    pub fn new() -> Block {
        Block {
            config: Box::new(Config::new()),
            samples: Vec::new(),
        }
    }

    /// The fixed part, for its scalar fields.
    pub fn config_mut(&mut self) -> &mut Config {
        &mut self.config
    }

    /// The fixed part.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Sets the compute or control CPU mask to `cpus`.
    pub fn set_cpus(&mut self, which: Cpus, cpus: impl IntoIterator<Item = usize>) -> Result<(), BlockError> {
        let mut mask = [0u64; CPU_WORDS];
        for cpu in cpus {
            if cpu >= MAX_CPUS {
                return Err(BlockError::Cpu { cpu });
            }
            mask[cpu / 64] |= 1 << (cpu % 64);
        }
        match which {
            Cpus::Compute => self.config.compute = mask,
            Cpus::Control => self.config.control = mask,
        }
        Ok(())
    }

    /// Sets the statistics directory (raw bytes of a Unix path).
    pub fn set_stats_dir(&mut self, path: &[u8]) -> Result<(), BlockError> {
        self.config.stats_dir =
            path_field("statistics directory", "set TMPDIR to a shorter directory", path)?;
        Ok(())
    }

    /// Sets the rewrite cache's directory (raw bytes of a Unix path; empty: no cache).
    pub fn set_rewrite_cache(&mut self, path: &[u8]) -> Result<(), BlockError> {
        self.config.rewrite_cache = path_field(
            "rewrite cache directory",
            "set MULTIOS_REWRITE_CACHE to a shorter directory, or to `off`",
            path,
        )?;
        Ok(())
    }

    /// Call `nr` runs at a local stub in the program's own context.
    pub fn run_at_local_stub(&mut self, nr: usize) -> Result<(), BlockError> {
        *self.config.local_stub.get_mut(nr).ok_or(BlockError::Nr { nr })? = 1;
        Ok(())
    }

    /// Call `nr` is delegated at `cost`.
    pub fn delegate(&mut self, nr: usize, cost: Delegated) -> Result<(), BlockError> {
        if nr >= NR_MAX {
            return Err(BlockError::Nr { nr });
        }
        let c = match cost {
            Delegated::Constant(t) => Cost {
                kind: cost_kind::CONSTANT,
                param: t,
                ..Cost::default()
            },
            Delegated::Exponential(t) => Cost {
                kind: cost_kind::EXPONENTIAL,
                param: t,
                ..Cost::default()
            },
            Delegated::Samples(s) => {
                let at = size_of::<Config>() + 8 * self.samples.len();
                let n = s.len() as u64;
                self.samples.extend(s);
                Cost {
                    kind: cost_kind::SAMPLES,
                    samples: at as u64,
                    nsamples: n,
                    ..Cost::default()
                }
            }
        };
        self.config.delegated[nr] = 1;
        self.config.costs[nr] = c;
        Ok(())
    }

    /// The block's bytes: the fixed part (its `total` set) and the samples.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut c = *self.config;
        c.total = (size_of::<Config>() + 8 * self.samples.len()) as u64;
        let mut out = Vec::with_capacity(c.total as usize);
        c.encode(&mut out);
        debug_assert_eq!(out.len(), size_of::<Config>());
        for s in &self.samples {
            out.extend_from_slice(&s.to_ne_bytes());
        }
        out
    }
}

/// Checks a block's magic, version and size the way the C library does; `what` names it in the
/// error (a path, say).
pub fn check_header(bytes: &[u8], what: &str) -> Result<(), BlockError> {
    let word = |at: usize| {
        bytes
            .get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_ne_bytes)
    };
    let (Some(magic), Some(version), Some(size)) = (word(0), word(4), word(8)) else {
        return Err(BlockError::Short {
            what: what.into(),
            len: bytes.len(),
            need: 12,
        });
    };
    if magic != MAGIC {
        return Err(BlockError::Magic {
            what: what.into(),
            found: magic,
        });
    }
    if version != VERSION {
        return Err(BlockError::Version {
            what: what.into(),
            found: version,
        });
    }
    if size as usize != size_of::<Config>() {
        return Err(BlockError::Size {
            what: what.into(),
            found: size,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::offset_of;

    fn u64_at(b: &[u8], at: usize) -> u64 {
        u64::from_ne_bytes(b[at..at + 8].try_into().expect("8 bytes"))
    }

    #[test]
    fn header_fields_come_first() {
        assert_eq!(offset_of!(Config, magic), 0);
        assert_eq!(offset_of!(Config, version), 4);
        assert_eq!(offset_of!(Config, size), 8);
        assert_eq!(size_of::<Config>() % 8, 0);
    }

    #[test]
    fn every_field_is_encoded_at_its_offset() {
        let mut b = Block::new();
        let c = b.config_mut();
        (c.mode, c.intercept, c.timing, c.rewrite, c.realtime) = (1, 1, 1, 1, 1);
        (c.idle_ticks, c.patience_ticks, c.hv_exit_ticks) = (11, 12, 13);
        b.set_cpus(Cpus::Compute, [3]).expect("CPU 3");
        b.set_cpus(Cpus::Control, [64]).expect("CPU 64");
        b.set_stats_dir(b"/s").expect("short path");
        b.run_at_local_stub(5).expect("nr 5");
        b.delegate(511, Delegated::Exponential(99)).expect("nr 511");
        let bytes = b.to_bytes();
        assert_eq!(bytes.len(), size_of::<Config>());
        let u32_at = |at: usize| u32::from_ne_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        assert_eq!(u32_at(offset_of!(Config, magic)), MAGIC);
        assert_eq!(u32_at(offset_of!(Config, version)), VERSION);
        assert_eq!(u32_at(offset_of!(Config, size)) as usize, size_of::<Config>());
        for at in [
            offset_of!(Config, mode),
            offset_of!(Config, intercept),
            offset_of!(Config, timing),
            offset_of!(Config, rewrite),
            offset_of!(Config, realtime),
        ] {
            assert_eq!(u32_at(at), 1, "field at {at}");
        }
        assert_eq!(u64_at(&bytes, offset_of!(Config, idle_ticks)), 11);
        assert_eq!(u64_at(&bytes, offset_of!(Config, patience_ticks)), 12);
        assert_eq!(u64_at(&bytes, offset_of!(Config, hv_exit_ticks)), 13);
        assert_eq!(u64_at(&bytes, offset_of!(Config, compute)), 1 << 3);
        assert_eq!(u64_at(&bytes, offset_of!(Config, control) + 8), 1);
        assert_eq!(&bytes[offset_of!(Config, stats_dir)..][..3], b"/s\0");
        assert_eq!(bytes[offset_of!(Config, local_stub) + 5], 1);
        assert_eq!(bytes[offset_of!(Config, delegated) + 511], 1);
        let cost = offset_of!(Config, costs) + 511 * size_of::<Cost>();
        assert_eq!(u32_at(cost + offset_of!(Cost, kind)), cost_kind::EXPONENTIAL);
        assert_eq!(u64_at(&bytes, cost + offset_of!(Cost, param)), 99);
    }

    #[test]
    fn samples_land_in_the_trailing_area() {
        let mut b = Block::new();
        b.delegate(1, Delegated::Constant(7)).expect("nr 1");
        b.delegate(0, Delegated::Samples(vec![10, 20, 30])).expect("nr 0");
        b.delegate(3, Delegated::Samples(vec![40])).expect("nr 3");
        let bytes = b.to_bytes();
        check_header(&bytes, "test").expect("a fresh block is valid");
        assert_eq!(bytes.len(), size_of::<Config>() + 4 * 8);
        assert_eq!(u64_at(&bytes, offset_of!(Config, total)), bytes.len() as u64);
        let cost = |nr: usize| offset_of!(Config, costs) + nr * size_of::<Cost>();
        assert_eq!(u64_at(&bytes, cost(1) + offset_of!(Cost, param)), 7);
        let at = u64_at(&bytes, cost(3) + offset_of!(Cost, samples)) as usize;
        assert_eq!(
            (
                u64_at(&bytes, at),
                u64_at(&bytes, cost(3) + offset_of!(Cost, nsamples))
            ),
            (40, 1)
        );
        let at = u64_at(&bytes, cost(0) + offset_of!(Cost, samples)) as usize;
        assert_eq!(u64_at(&bytes, at + 16), 30);
        assert_eq!(
            (
                bytes[offset_of!(Config, delegated) + 1],
                bytes[offset_of!(Config, delegated) + 2]
            ),
            (1, 0)
        );
    }

    #[test]
    fn cpus_paths_and_numbers_out_of_range_are_refused() {
        let mut b = Block::new();
        b.set_cpus(Cpus::Control, [0, 65, 1023]).expect("in range");
        assert_eq!(b.config().control[1], 2);
        assert_eq!(b.config().control[15], 1 << 63);
        assert_eq!(
            b.set_cpus(Cpus::Compute, [1024]),
            Err(BlockError::Cpu { cpu: 1024 })
        );
        assert!(b.set_stats_dir(&[b'a'; PATH_MAX]).is_err());
        assert!(b.set_stats_dir(b"a\0b").is_err());
        b.set_stats_dir(b"/tmp/x").expect("short path");
        assert_eq!(&b.config().stats_dir[..7], b"/tmp/x\0");
        assert!(b.set_rewrite_cache(&[b'a'; PATH_MAX]).is_err());
        b.set_rewrite_cache(b"/c").expect("short path");
        assert_eq!(&b.config().rewrite_cache[..3], b"/c\0");
        assert_eq!(b.run_at_local_stub(NR_MAX), Err(BlockError::Nr { nr: NR_MAX }));
        assert_eq!(
            b.delegate(NR_MAX, Delegated::Constant(1)),
            Err(BlockError::Nr { nr: NR_MAX })
        );
    }

    #[test]
    fn wrong_magic_version_or_size_is_named() {
        let good = Block::new().to_bytes();
        let mut b = good.clone();
        b[4..8].copy_from_slice(&(VERSION + 1).to_ne_bytes());
        let e = check_header(&b, "f").expect_err("version");
        assert!(e.to_string().contains(&format!("version {}", VERSION + 1)), "{e}");
        let mut b = good.clone();
        b[0] = b'X';
        assert!(matches!(check_header(&b, "f"), Err(BlockError::Magic { .. })));
        let mut b = good;
        b[8..12].copy_from_slice(&8u32.to_ne_bytes());
        assert!(matches!(
            check_header(&b, "f"),
            Err(BlockError::Size { found: 8, .. })
        ));
        assert!(matches!(
            check_header(&[0; 4], "f"),
            Err(BlockError::Short { .. })
        ));
    }
}
