//! The caller of a system-call wrapper, from the guest's stack.
//!
//! glibc's wrappers enter the kernel without a frame of their own, so the word at the stack pointer
//! is usually the return address into the function that called the wrapper. Compiled code does not
//! always keep frame pointers, so the stack is not walked: the first of the top [`WORDS`] words that
//! points just after a call instruction in guest memory is taken as the return address. A word
//! that merely looks like one (a spilled code pointer) can be taken instead; the report says
//! "caller", never "backtrace".

use crate::memory::GuestMemory;

/// Stack words examined for the caller.
pub const WORDS: u64 = 8;
/// Stack words examined for the deeper frames, and how many are kept.
pub const FRAME_WORDS: u64 = 96;
pub const FRAMES: usize = 8;

/// The return address of the wrapper's caller, or 0 when none of the top words looks like one.
pub fn caller_of(mem: &GuestMemory, rsp: u64) -> u64 {
    for k in 0..WORDS {
        let at = rsp.wrapping_add(8 * k);
        if !mem.in_app(at, 8) {
            return 0;
        }
        let word = mem.read_u64(at);
        if follows_call(mem, word) {
            return word;
        }
    }
    0
}

/// The return addresses among the top [`FRAME_WORDS`] stack words (at most [`FRAMES`], innermost
/// first, the caller's included): the functions the call was made under, as far as the words
/// that look like return addresses tell (a spilled code pointer may be among them).
pub fn frames_of(mem: &GuestMemory, rsp: u64) -> Vec<u64> {
    // One copy of the stack window (it may end early at the window's end), then only the words
    // that point into the application window are looked at.
    let words = (0..FRAME_WORDS)
        .take_while(|&k| mem.in_app(rsp.wrapping_add(8 * k), 8))
        .count();
    let mut raw = vec![0u8; words * 8];
    if words > 0 {
        mem.read(rsp, &mut raw);
    }
    let mut out = Vec::new();
    for w in raw.chunks_exact(8) {
        let word = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        if out.len() == FRAMES {
            break;
        }
        if mem.in_app(word, 1) && follows_call(mem, word) && !out.contains(&word) {
            out.push(word);
        }
    }
    out
}

/// True when the bytes before `ret` end with a call instruction: `call rel32` (e8, 5 bytes),
/// `call *disp32(%rip)` (ff 15, 6 bytes: -fno-plt and PLT-less calls), `call *%reg` (ff d0+r,
/// 2 bytes, or 41 ff d0+r with a REX prefix).
fn follows_call(mem: &GuestMemory, ret: u64) -> bool {
    if ret < 6 || !mem.in_app(ret - 6, 6) {
        return false;
    }
    let mut b = [0u8; 6];
    mem.read(ret - 6, &mut b);
    is_call_ending(&b)
}

/// The six bytes before a return address end with a call instruction.
fn is_call_ending(b: &[u8; 6]) -> bool {
    b[1] == 0xe8 || (b[0] == 0xff && b[1] == 0x15) || (b[4] == 0xff && (0xd0..=0xd7).contains(&b[5]))
}

#[cfg(test)]
mod tests {
    use super::is_call_ending;

    #[test]
    fn call_forms_are_recognized_and_other_bytes_are_not() {
        assert!(is_call_ending(&[0x90, 0xe8, 1, 2, 3, 4]));
        assert!(is_call_ending(&[0xff, 0x15, 1, 2, 3, 4]));
        assert!(is_call_ending(&[0, 0, 0, 0x41, 0xff, 0xd3]));
        assert!(!is_call_ending(&[0x48, 0x89, 0xc7, 0x0f, 0x05, 0xc3]));
    }
}
