//! A signal's siginfo: who sent it (pid, uid, si_code and the rest of the sender's siginfo), or
//! the CPU exception that raised it, and the 128 bytes Linux writes for a handler.

/// siginfo codes.
pub const SI_USER: i32 = 0;
pub const SI_QUEUE: i32 = -1;
pub const SI_TIMER: i32 = -2;
pub const SI_TKILL: i32 = -6;
pub const SI_KERNEL: i32 = 0x80;

/// Who sent a pending signal, or the CPU exception that raised it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SigInfo {
    pub code: i32,
    pub pid: i32,
    pub uid: u32,
    pub trap: Option<Trap>,
    /// Bytes 16..128 of the siginfo as its sender filled them (sigqueue's si_value, a timer's id,
    /// overrun and value, SIGCHLD's status and times…), when there is more than pid and uid.
    pub fields: Option<[u64; 14]>,
}

impl SigInfo {
    /// The siginfo of a signal the host kernel delivered to the VMM (its 128 bytes as words).
    pub fn from_host(words: &[u64; 16]) -> SigInfo {
        let mut fields = [0u64; 14];
        fields.copy_from_slice(&words[2..]);
        SigInfo {
            code: words[1] as u32 as i32,
            pid: words[2] as u32 as i32,
            uid: (words[2] >> 32) as u32,
            trap: None,
            fields: Some(fields),
        }
    }

    /// The siginfo a guest passed to rt_sigqueueinfo/rt_tgsigqueueinfo (128 bytes).
    pub fn from_guest(bytes: &[u8; 128]) -> SigInfo {
        let mut words = [0u64; 16];
        for (k, w) in words.iter_mut().enumerate() {
            *w = u64::from_le_bytes(bytes[8 * k..8 * k + 8].try_into().unwrap_or_default());
        }
        SigInfo::from_host(&words)
    }

    /// The 128-byte siginfo of signal `sig` as Linux writes it for a handler or sigtimedwait.
    pub fn bytes(&self, sig: u64) -> [u8; 128] {
        let mut b = [0u8; 128];
        b[0..4].copy_from_slice(&(sig as i32).to_le_bytes());
        b[8..12].copy_from_slice(&self.code.to_le_bytes());
        if let Some(t) = self.trap {
            b[16..24].copy_from_slice(&t.addr.to_le_bytes());
        } else if let Some(f) = self.fields {
            for (k, w) in f.iter().enumerate() {
                b[16 + 8 * k..24 + 8 * k].copy_from_slice(&w.to_le_bytes());
            }
        } else {
            b[16..20].copy_from_slice(&self.pid.to_le_bytes());
            b[20..24].copy_from_slice(&self.uid.to_le_bytes());
        }
        b
    }
}

/// A CPU exception raised as a signal: what the frame's siginfo (si_addr) and sigcontext
/// (trapno, err, cr2) carry, as Linux fills them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Trap {
    pub vector: u64,
    pub error: u64,
    /// si_addr: the faulting address (#PF), the instruction (#DE, #UD, #XM), 0 otherwise.
    pub addr: u64,
    pub cr2: u64,
}
