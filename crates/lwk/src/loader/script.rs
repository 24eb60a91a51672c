//! `#!` scripts: the interpreter line, and the argv that runs the script through it (one level,
//! as execve does), shared by the first start and execve.

use std::path::Path;

/// The first `n` bytes of the file at `path` (fewer when it is shorter); `Err` is the errno.
fn head(path: &Path, n: usize) -> Result<Vec<u8>, i32> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| e.raw_os_error().unwrap_or(libc::EACCES))?;
    let mut b = vec![0u8; n];
    let got = f
        .read(&mut b)
        .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    b.truncate(got);
    Ok(b)
}

/// True when `path` starts with the ELF magic.
pub(crate) fn is_elf(path: &Path) -> bool {
    head(path, 4).is_ok_and(|h| h == b"\x7fELF")
}

/// A `#!` line: the interpreter and its one optional argument.
pub(crate) type Shebang = (Vec<u8>, Option<Vec<u8>>);

/// The argv that runs a script through its `#!` interpreter: interpreter, its argument, the
/// script's path, then the script's own arguments (argv[1..]).
pub(crate) fn argv(shebang: Shebang, script: Vec<u8>, argv: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let (interp, arg) = shebang;
    let mut v = vec![interp];
    v.extend(arg);
    v.push(script);
    v.extend(argv.into_iter().skip(1));
    v
}

/// The interpreter (and its one optional argument) of a `#!` script.
pub(crate) fn interpreter(path: &Path) -> Result<Option<Shebang>, i32> {
    let h = head(path, 256)?;
    if !h.starts_with(b"#!") {
        return Ok(None);
    }
    let line = h[2..].split(|&c| c == b'\n').next().unwrap_or(&[]);
    let line: Vec<u8> = line.to_vec();
    let trimmed = String::from_utf8_lossy(&line);
    let mut parts = trimmed.trim().splitn(2, [' ', '\t']);
    let interp = parts.next().filter(|s| !s.is_empty()).ok_or(libc::ENOEXEC)?;
    let arg = parts
        .next()
        .map(|s| s.trim().as_bytes().to_vec())
        .filter(|a| !a.is_empty());
    Ok(Some((interp.as_bytes().to_vec(), arg)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebang_lines_give_the_interpreter_and_one_argument() {
        let dir = std::env::temp_dir().join(format!("multios-exec-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let s = dir.join("s");
        std::fs::write(&s, "#!/bin/sh -e\necho hi\n").expect("write");
        assert_eq!(
            interpreter(&s),
            Ok(Some((b"/bin/sh".to_vec(), Some(b"-e".to_vec()))))
        );
        std::fs::write(&s, "#! /usr/bin/env  python3 \n").expect("write");
        assert_eq!(
            interpreter(&s),
            Ok(Some((b"/usr/bin/env".to_vec(), Some(b"python3".to_vec()))))
        );
        std::fs::write(&s, "\x7fELF").expect("write");
        assert_eq!(interpreter(&s), Ok(None));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
