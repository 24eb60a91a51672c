//! `#!` scripts: the interpreter line, and the argv that runs the script through it, shared by the
//! first start and execve. An interpreter may itself be a `#!` script: like Linux (`exec_binprm`,
//! at most 5 rewrites, then ELOOP) each level rewrites argv again ([`follow`]).

use super::exefile::ExeFile;
use std::path::Path;

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

/// How many `#!` rewrites Linux makes before failing with ELOOP (`exec_binprm`: depth 0..=5, the
/// last one for the binary the chain ends in).
pub(crate) const MAX_REWRITES: usize = 5;

/// Follows `#!` lines from `prog` (named `name` — the path as the caller gave it — in the argv of
/// its interpreter) to the binary that runs it, rewriting `argv` at each level as Linux does:
/// argv[0] is replaced by the interpreter, its argument and the name of the file being run. Each
/// interpreter is opened by `open` (execve's ENOENT/EACCES: a FIFO or a device named by a `#!`
/// line is EACCES, and is never opened for reading); more than [`MAX_REWRITES`] levels is ELOOP.
/// Returns the binary and its argv (unchanged when `prog` is not a script).
pub(crate) fn follow(
    mut prog: ExeFile,
    mut name: Vec<u8>,
    mut argv: Vec<Vec<u8>>,
    open: impl Fn(&Path) -> Result<ExeFile, i32>,
) -> Result<(ExeFile, Vec<Vec<u8>>), i32> {
    use std::os::unix::ffi::OsStrExt;
    for level in 0.. {
        let Some(shebang) = interpreter(&prog)? else {
            break;
        };
        if level == MAX_REWRITES {
            return Err(libc::ELOOP);
        }
        let interp = shebang.0.clone();
        argv = self::argv(shebang, name, argv);
        prog = open(Path::new(std::ffi::OsStr::from_bytes(&interp)))?;
        name = interp;
    }
    Ok((prog, argv))
}

/// The interpreter (and its one optional argument) of a `#!` script.
pub(crate) fn interpreter(file: &ExeFile) -> Result<Option<Shebang>, i32> {
    let h = file.head(256)?;
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
        let interpreter = |p: &Path| interpreter(&ExeFile::open(p).expect("open"));
        std::fs::write(&s, "#!/bin/sh -e\necho hi\n").expect("write");
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&s, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
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

    #[test]
    fn nested_interpreters_rewrite_argv_at_each_level_up_to_five() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("multios-nest-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let name = |i: usize| dir.join(format!("s{i}"));
        std::fs::write(name(0), "#!/bin/sh\necho hi\n").expect("write");
        for i in 1..=6 {
            std::fs::write(name(i), format!("#!{} a{i}\n", name(i - 1).display())).expect("write");
        }
        for i in 0..=6 {
            let mut p = std::fs::metadata(name(i)).expect("meta").permissions();
            p.set_mode(0o755);
            std::fs::set_permissions(name(i), p).expect("chmod");
        }
        let ok = |p: &Path| ExeFile::open(p);
        let open = |p: std::path::PathBuf| ExeFile::open(&p).expect("open");
        let (prog, argv) = follow(
            open(name(2)),
            b"./s2".to_vec(),
            vec![b"./s2".to_vec(), b"x".to_vec()],
            ok,
        )
        .expect("two levels");
        assert_eq!(prog.path, std::path::PathBuf::from("/bin/sh"));
        let s = |p: std::path::PathBuf| p.to_string_lossy().as_bytes().to_vec();
        assert_eq!(
            argv,
            vec![
                b"/bin/sh".to_vec(),
                s(name(0)),
                b"a1".to_vec(),
                s(name(1)),
                b"a2".to_vec(),
                b"./s2".to_vec(),
                b"x".to_vec()
            ]
        );
        assert!(follow(open(name(4)), s(name(4)), vec![s(name(4))], ok).is_ok());
        assert_eq!(
            follow(open(name(5)), s(name(5)), vec![s(name(5))], ok).err(),
            Some(libc::ELOOP)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
