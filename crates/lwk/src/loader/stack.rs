//! The initial process stack: argc, argv, envp and the auxiliary vector, laid out as Linux does.

use crate::memory::GuestMemory;

pub const AT_NULL: u64 = 0;
pub const AT_PHDR: u64 = 3;
pub const AT_PHENT: u64 = 4;
pub const AT_PHNUM: u64 = 5;
pub const AT_PAGESZ: u64 = 6;
pub const AT_BASE: u64 = 7;
pub const AT_FLAGS: u64 = 8;
pub const AT_ENTRY: u64 = 9;
pub const AT_UID: u64 = 11;
pub const AT_EUID: u64 = 12;
pub const AT_GID: u64 = 13;
pub const AT_EGID: u64 = 14;
pub const AT_PLATFORM: u64 = 15;
pub const AT_HWCAP: u64 = 16;
pub const AT_CLKTCK: u64 = 17;
pub const AT_SECURE: u64 = 23;
pub const AT_RANDOM: u64 = 25;
pub const AT_HWCAP2: u64 = 26;
pub const AT_EXECFN: u64 = 31;

/// What goes on the stack.
#[derive(Debug, Clone, Default)]
pub struct StackSpec {
    pub argv: Vec<Vec<u8>>,
    pub envp: Vec<Vec<u8>>,
    pub execfn: Vec<u8>,
    /// (type, value) pairs except AT_RANDOM, AT_EXECFN, AT_PLATFORM and AT_NULL, added here.
    pub auxv: Vec<(u64, u64)>,
    pub random: [u8; 16],
}

/// An upper bound of the bytes [`build`] writes below its top for `spec`: the strings with their
/// NULs, alignment, AT_RANDOM's bytes, and the argc/argv/envp/auxv words.
pub fn size(spec: &StackSpec) -> u64 {
    let strings: u64 = std::iter::once(&spec.execfn)
        .chain(&spec.envp)
        .chain(&spec.argv)
        .map(|s| s.len() as u64 + 1)
        .sum();
    let words =
        1 + spec.argv.len() as u64 + 1 + spec.envp.len() as u64 + 1 + 2 * (spec.auxv.len() as u64 + 4);
    8 + strings + 7 + 16 + 16 + 16 + 8 * words + 16
}

/// Where [`build`] put the argument and environment strings: `[start, end)` each, laid out as
/// Linux lays them (argv[0] lowest, each block contiguous, the environment above the arguments),
/// for `/proc/PID/cmdline` and `/proc/PID/environ`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Strings {
    pub args: (u64, u64),
    pub env: (u64, u64),
}

/// Writes the stack below `top` and returns the initial rsp (pointing at argc, 16-byte aligned),
/// the auxiliary vector as written, AT_NULL included (what `/proc/self/auxv` shows), and where the
/// argument and environment strings are.
pub fn build(mem: &GuestMemory, top: u64, spec: &StackSpec) -> (u64, Vec<u64>, Strings) {
    let mut sp = top - 8;
    let push_bytes = |data: &[u8], sp: &mut u64| -> u64 {
        *sp -= data.len() as u64 + 1;
        mem.write(*sp, data);
        mem.write(*sp + data.len() as u64, &[0]);
        *sp
    };
    // A block of strings, lowest first, as execve leaves them: (their addresses, the block).
    let push_block = |list: &[Vec<u8>], sp: &mut u64| -> (Vec<u64>, (u64, u64)) {
        let end = *sp;
        *sp -= list.iter().map(|s| s.len() as u64 + 1).sum::<u64>();
        let mut at = *sp;
        let addrs = list
            .iter()
            .map(|s| {
                let a = at;
                mem.write(a, s);
                mem.write(a + s.len() as u64, &[0]);
                at += s.len() as u64 + 1;
                a
            })
            .collect();
        (addrs, (*sp, end))
    };
    let execfn = push_bytes(&spec.execfn, &mut sp);
    let (envp, env) = push_block(&spec.envp, &mut sp);
    let (argv, args) = push_block(&spec.argv, &mut sp);
    let strings = Strings { args, env };
    let platform = push_bytes(b"x86_64", &mut sp);
    sp &= !15;
    sp -= 16;
    mem.write(sp, &spec.random);
    let random = sp;

    let mut words: Vec<u64> = vec![argv.len() as u64];
    words.extend(&argv);
    words.push(0);
    words.extend(&envp);
    words.push(0);
    for (k, v) in &spec.auxv {
        words.extend([*k, *v]);
    }
    words.extend([
        AT_RANDOM,
        random,
        AT_EXECFN,
        execfn,
        AT_PLATFORM,
        platform,
        AT_NULL,
        0,
    ]);
    let auxv = words[words.len() - 2 * (spec.auxv.len() + 4)..].to_vec();
    sp -= 8 * words.len() as u64;
    sp &= !15;
    for (i, w) in words.iter().enumerate() {
        mem.write_u64(sp + 8 * i as u64, *w);
    }
    (sp, auxv, strings)
}
