//! Writing results to stdout. `println!` panics when stdout is a pipe whose reader has gone
//! (`multios … --json | head -1`); these macros end the process quietly instead, with status 0,
//! as ripgrep does. (SIGPIPE stays ignored: the emulator's delegates and the LWK's proxy write on the
//! guest's behalf and must get EPIPE, not die.)

use std::io::Write;

/// Writes `args` to stdout; exits with status 0 when the reader of a pipe has gone.
pub fn write(args: std::fmt::Arguments) {
    let mut out = std::io::stdout().lock();
    match out.write_fmt(args).and_then(|()| out.flush()) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => {
            eprintln!("multios: cannot write to stdout: {e}");
            std::process::exit(1);
        }
    }
}

/// `print!` to stdout that survives a closed pipe (see the module comment).
macro_rules! out {
    ($($t:tt)*) => {
        $crate::stdout::write(format_args!($($t)*))
    };
}

/// `println!` to stdout that survives a closed pipe (see the module comment).
macro_rules! outln {
    () => {
        $crate::stdout::write(format_args!("\n"))
    };
    ($($t:tt)*) => {
        $crate::stdout::write(format_args!("{}\n", format_args!($($t)*)))
    };
}
