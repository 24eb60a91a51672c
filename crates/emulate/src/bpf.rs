//! Classic-BPF seccomp filters built from a [`Delegation`].
//!
//! Layout: non-x86_64 ABIs and x32 numbers are allowed; then one 4-instruction block per range of
//! delegated numbers, ascending, each ending the search early, so a call costs at most a few
//! comparisons per range; a delegated number then checks the instruction pointer: calls from the
//! launcher's own exempt `syscall` site are allowed (so the launcher can hand over the listener and
//! exec after installing the filter). A non-delegated number is allowed without looking at anything
//! but the architecture and the number, so the kernel's constant-action cache (Linux ≥ 5.11) allows
//! it without running the filter at all.

use crate::Delegation;

const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JGT_K: u16 = (libc::BPF_JMP | libc::BPF_JGT | libc::BPF_K) as u16;
const JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
const JA: u16 = (libc::BPF_JMP | libc::BPF_JA) as u16;

const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
const OFF_IP_LO: u32 = 8;
const OFF_IP_HI: u32 = 12;
const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
const X32_BIT: u32 = 0x4000_0000;

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// A filter returning `hit` for delegated calls and ALLOW for the rest; calls made from the
/// instruction address `exempt_ip` (the address after a `syscall` instruction) are always allowed.
pub fn filter(d: &Delegation, hit: u32, exempt_ip: u64) -> Vec<libc::sock_filter> {
    let allow = libc::SECCOMP_RET_ALLOW;
    let mut p = vec![
        stmt(LD_W_ABS, OFF_ARCH),
        jump(JEQ_K, AUDIT_ARCH_X86_64, 1, 0),
        stmt(RET_K, allow),
        stmt(LD_W_ABS, OFF_NR),
        jump(JGE_K, X32_BIT, 0, 1),
        stmt(RET_K, allow),
    ];
    let ranges = d.ranges();
    for (i, (lo, hi)) in ranges.iter().enumerate() {
        p.push(jump(JGT_K, *hi, 3, 0)); // above this range: try the next one
                                        // Below this range: not delegated (ranges ascend).
        p.push(jump(JGE_K, *lo, 0, 1));
        // Delegated: jump over the remaining blocks and the final ALLOW to the IP check.
        p.push(stmt(JA, (4 * (ranges.len() - i - 1) + 2) as u32));
        p.push(stmt(RET_K, allow));
    }
    p.push(stmt(RET_K, allow));
    if !ranges.is_empty() {
        p.extend([
            stmt(LD_W_ABS, OFF_IP_LO),
            jump(JEQ_K, exempt_ip as u32, 0, 3),
            stmt(LD_W_ABS, OFF_IP_HI),
            jump(JEQ_K, (exempt_ip >> 32) as u32, 0, 1),
            stmt(RET_K, allow),
            stmt(RET_K, hit),
        ]);
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny interpreter for the instructions `filter` emits.
    fn run(p: &[libc::sock_filter], nr: u32, ip: u64) -> u32 {
        run_ip(p, nr, Some(ip))
    }

    /// As `run`; with `ip: None`, loading the instruction pointer is a test failure.
    fn run_ip(p: &[libc::sock_filter], nr: u32, ip: Option<u64>) -> u32 {
        let v = ip.unwrap_or(0);
        let data = [nr, AUDIT_ARCH_X86_64, v as u32, (v >> 32) as u32];
        let (mut pc, mut a) = (0usize, 0u32);
        loop {
            let i = p[pc];
            pc += 1;
            match i.code {
                LD_W_ABS => {
                    assert!(
                        ip.is_some() || i.k < OFF_IP_LO,
                        "nr {nr}: the verdict reads the IP"
                    );
                    a = data[i.k as usize / 4]
                }
                RET_K => return i.k,
                JA => pc += i.k as usize,
                JEQ_K | JGT_K | JGE_K => {
                    let t = match i.code {
                        JEQ_K => a == i.k,
                        JGT_K => a > i.k,
                        _ => a >= i.k,
                    };
                    pc += usize::from(if t { i.jt } else { i.jf });
                }
                _ => panic!("unexpected opcode {}", i.code),
            }
        }
    }

    #[test]
    fn filter_matches_the_delegation_exactly() {
        let d = Delegation::from_fn("t", |n| {
            matches!(n, "read" | "write" | "close" | "getppid" | "uname")
        });
        let p = filter(&d, 7, 0x7fff_0000_1234);
        for nr in 0..512u32 {
            let want = if d.is_delegated(nr) {
                7
            } else {
                libc::SECCOMP_RET_ALLOW
            };
            assert_eq!(run(&p, nr, 0x1000), want, "nr {nr}");
        }
        assert_eq!(run(&p, 1, 0x7fff_0000_1234), libc::SECCOMP_RET_ALLOW);
        assert_eq!(run(&p, 1, 0x7ffe_0000_1234), 7);
        assert_eq!(run(&p, X32_BIT | 1, 0), libc::SECCOMP_RET_ALLOW);
    }

    #[test]
    fn non_delegated_verdicts_never_read_the_ip() {
        // So the kernel's constant-action cache can allow them without running the filter.
        let d = Delegation::from_fn("t", |n| matches!(n, "read" | "getppid" | "uname"));
        let p = filter(&d, 7, 0x7fff_0000_1234);
        for nr in (0..512u32).filter(|n| !d.is_delegated(*n)) {
            assert_eq!(run_ip(&p, nr, None), libc::SECCOMP_RET_ALLOW, "nr {nr}");
        }
    }

    #[test]
    fn all_and_none() {
        let p = filter(&Delegation::all(), 7, 0);
        assert_eq!(run(&p, 39, 5), 7);
        let p = filter(&Delegation::none(), 7, 0);
        assert_eq!(run(&p, 39, 5), libc::SECCOMP_RET_ALLOW);
        assert!(
            p.iter().all(|i| i.code != LD_W_ABS || i.k != OFF_IP_LO),
            "IP never loaded"
        );
    }
}
