//! The alternate signal stack of a thread (sigaltstack): its settings as the LWK keeps them, and
//! the `stack_t` the guest passes and reads back (sigaltstack, a frame's uc_stack).

/// A thread's alternate signal stack (`stack_t`: ss_sp at 0, ss_flags at 8, ss_size at 16).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AltStack {
    pub sp: u64,
    pub size: u64,
    /// SS_AUTODISARM: disarmed while a handler runs on it, re-armed by its rt_sigreturn.
    pub autodisarm: bool,
}

const SS_ONSTACK: u32 = 1;

const SS_DISABLE: u32 = 2;

const SS_AUTODISARM: u32 = 1 << 31;

/// The smallest alternate stack Linux accepts (MINSIGSTKSZ on x86-64).
const MIN_ALTSTACK: u64 = 2048;

impl AltStack {
    pub(crate) fn contains(&self, sp: u64) -> bool {
        sp > self.sp && sp - self.sp <= self.size
    }

    /// The `stack_t` describing `alt` as seen from stack pointer `sp` (uc_stack, sigaltstack's
    /// old value).
    pub(crate) fn stack_t(alt: Option<AltStack>, sp: Option<u64>) -> [u8; 24] {
        let mut ss = [0u8; 24];
        let (base, size, flags) = match alt {
            None => (0, 0, SS_DISABLE),
            Some(a) => {
                let on = sp.is_some_and(|sp| a.contains(sp));
                let flags = if on { SS_ONSTACK } else { 0 } | if a.autodisarm { SS_AUTODISARM } else { 0 };
                (a.sp, a.size, flags)
            }
        };
        ss[0..8].copy_from_slice(&base.to_le_bytes());
        ss[8..12].copy_from_slice(&flags.to_le_bytes());
        ss[16..24].copy_from_slice(&size.to_le_bytes());
        ss
    }

    /// Reads a `stack_t` the guest passed: `Ok(None)` disables, `Err` is the errno.
    pub(crate) fn parse(ss: &[u8; 24]) -> Result<Option<AltStack>, i32> {
        let u64_at = |o: usize| u64::from_le_bytes(ss[o..o + 8].try_into().unwrap_or([0; 8]));
        let flags = u32::from_le_bytes(ss[8..12].try_into().unwrap_or([0; 4]));
        // SS_ONSTACK is accepted and means nothing, as in Linux.
        match flags & !SS_AUTODISARM {
            SS_DISABLE => Ok(None),
            0 | SS_ONSTACK => {
                let size = u64_at(16);
                if size < MIN_ALTSTACK {
                    return Err(libc::ENOMEM);
                }
                Ok(Some(AltStack {
                    sp: u64_at(0),
                    size,
                    autodisarm: flags & SS_AUTODISARM != 0,
                }))
            }
            _ => Err(libc::EINVAL),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack_t(sp: u64, flags: u32, size: u64) -> [u8; 24] {
        let mut ss = [0u8; 24];
        ss[0..8].copy_from_slice(&sp.to_le_bytes());
        ss[8..12].copy_from_slice(&flags.to_le_bytes());
        ss[16..24].copy_from_slice(&size.to_le_bytes());
        ss
    }

    #[test]
    fn sigaltstack_values_round_trip_and_bad_ones_get_linux_errors() {
        let a = AltStack::parse(&stack_t(0x1000, SS_AUTODISARM, 8192)).expect("valid");
        assert_eq!(
            a,
            Some(AltStack {
                sp: 0x1000,
                size: 8192,
                autodisarm: true
            })
        );
        // Reported as it was set; SS_ONSTACK when the stack pointer is inside.
        assert_eq!(AltStack::stack_t(a, None), stack_t(0x1000, SS_AUTODISARM, 8192));
        assert_eq!(
            AltStack::stack_t(a, Some(0x2000)),
            stack_t(0x1000, SS_AUTODISARM | SS_ONSTACK, 8192)
        );
        assert_eq!(AltStack::stack_t(None, None), stack_t(0, SS_DISABLE, 0));
        assert_eq!(AltStack::parse(&stack_t(0, SS_DISABLE, 0)), Ok(None));
        assert_eq!(AltStack::parse(&stack_t(0x1000, 0, 100)), Err(libc::ENOMEM));
        assert_eq!(AltStack::parse(&stack_t(0x1000, 5, 8192)), Err(libc::EINVAL));
    }
}
