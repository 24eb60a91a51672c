//! What a procfs file the guest opened really is, decided from the open file, not from the path
//! the guest spelled (symbolic links, relative paths, a second procfs mounted anywhere, a bind
//! mount of a /proc subdirectory all lead to the same answer).
//!
//! For a descriptor on procfs (fstatfs), the VMM reads, through the procfs directory it opened at
//! start-up (kept in its own fd range, so a later mount over /proc does not change it), the fd's
//! path (`self/fd/N`), its mount and that mount's root and mount point (statmount(2); before Linux
//! 6.8 `mnt_id` of `self/fdinfo/N` and `self/mountinfo`, read by `procread`): hence the path *inside* procfs, e.g. `4242/task/4243/mem`. The
//! process it belongs to is a VMM when its `exe` is the same file (dev, ino) as this VMM's own:
//! every VMM of the run (ancestors, siblings, children) is recognised by what it is. Entries of a
//! VMM that reach its memory or its fds are refused; its maps are the guest's own (synthesized)
//! or refused; everything else is allowed.

use crate::sys;
use std::sync::OnceLock;

const PROC_SUPER_MAGIC: i64 = 0x9fa0;

/// Errors setting up the VMM's view of procfs.
#[derive(Debug, thiserror::Error)]
pub enum ProcError {
    #[error(
        "no procfs for the VMM: /proc {at_proc}, and a private procfs instance could not be made \
         (fsopen(\"proc\")/fsmount: {mount}; it needs CAP_SYS_ADMIN over the mount namespace and \
         Linux 5.2); mount procfs at /proc (mount -t proc proc /proc) or run lwk-run as root"
    )]
    NoProcfs { at_proc: String, mount: std::io::Error },
    #[error("/proc/self/exe: {0}; the LWK cannot recognise VMM processes and refuses their entries")]
    Exe(std::io::Error),
}

/// The VMM's procfs: a directory fd in the VMM's range and the identity of its executable.
#[derive(Debug)]
pub struct Proc {
    dir: i32,
    exe: (u64, u64),
}

static PROC: OnceLock<Result<Proc, String>> = OnceLock::new();

/// Opens the VMM's procfs directory (once per process; forked VMMs inherit it). `run` calls it
/// before anything else reads procfs and refuses to start when it fails.
pub fn init() -> Result<&'static Proc, String> {
    PROC.get_or_init(|| open().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(Clone::clone)
}

/// /proc when it is procfs; else (absent, or a plain directory a root guest could fill with a
/// `self/…` of its own) a procfs instance of the VMM's own, mounted nowhere (issue #16: every open
/// of the guest failed with EACCES without procfs at /proc).
fn open() -> Result<Proc, ProcError> {
    let floor = crate::fds::floor();
    let dir = match sys::create_high(floor, || {
        sys::open_at(libc::AT_FDCWD, "/proc", libc::O_RDONLY | libc::O_DIRECTORY)
    }) {
        Ok(d) if sys::fs_type(d).ok() == Some(PROC_SUPER_MAGIC) => Ok(d),
        Ok(d) => {
            sys::close(d);
            Err("is not a procfs mount".to_string())
        }
        Err(e) => Err(format!("cannot be opened ({e})")),
    };
    let dir = match dir {
        Ok(d) => d,
        Err(at_proc) => sys::create_high(floor, sys::private_procfs)
            .map_err(|mount| ProcError::NoProcfs { at_proc, mount })?,
    };
    let exe = sys::file_id_at(dir, "self/exe").map_err(|e| {
        sys::close(dir);
        ProcError::Exe(e)
    })?;
    sys::set_proc_dir(dir);
    Ok(Proc { dir, exe })
}

/// What an opened procfs file is, as far as the guest is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Harmless (or another process's, which the guest could reach natively too).
    Allow,
    /// Reaches a VMM's memory or fds, or cannot be identified: EACCES.
    Refuse,
    /// The guest's own maps: answered from the LWK's view of its address space.
    OwnMaps,
    /// The guest's own auxiliary vector: the one the LWK's loader wrote on its stack (procps reads
    /// it at start-up, and `ps` died of "fatal library error" when it was refused).
    OwnAuxv,
    /// The guest's own execution domain (`personality`, which the LWK keeps).
    OwnPersonality,
    /// The fd (or fdinfo) directory of a VMM: listable, with the VMM's fds hidden.
    FdDir,
    /// The guest's own `status` or `stat` (of host thread `task` when named under `task/`): the
    /// VMM's text with the guest's fields (`syscall/procstatus.rs`).
    OwnStatus(Option<i32>),
    OwnStat(Option<i32>),
    /// The guest's own `exe` link: its program's file, not the VMM's binary the link leads to on
    /// the host (`syscall/ownexe.rs`).
    OwnExe,
}

/// Facts about processes the classification needs (a trait so that the rules are unit-tested).
pub trait Facts {
    /// True when `pid` (a process or a thread) runs a VMM, or cannot be told apart from one.
    fn is_vmm(&self, pid: i32) -> bool;
    /// True when `pid` is this process or one of its threads.
    fn is_own(&self, pid: i32) -> bool;
    fn floor(&self) -> i32;
}

impl Facts for Proc {
    /// A VMM is recognised by its executable (this VMM's binary: every VMM of the run) or, for a
    /// VMM built from another binary of multios (`multios lwk run` beside the test runner), by the
    /// LWK's system page mapped at LWK_BASE.
    fn is_vmm(&self, pid: i32) -> bool {
        let same_exe = sys::file_id_at(self.dir, &format!("{pid}/exe")).map_or(true, |id| id == self.exe);
        same_exe || {
            let lwk = format!("{:x}-", crate::memory::LWK_BASE);
            crate::procread::read(self.dir, &format!("{pid}/maps")).map_or(true, |m| {
                String::from_utf8_lossy(&m).lines().any(|l| l.starts_with(&lwk))
            })
        }
    }

    fn is_own(&self, pid: i32) -> bool {
        pid == std::process::id() as i32 || sys::file_id_at(self.dir, &format!("self/task/{pid}")).is_ok()
    }

    fn floor(&self) -> i32 {
        crate::fds::floor()
    }
}

/// True when descriptor `fd` is this VMM's own binary (the file its `exe` link leads to).
pub fn is_vmm_binary(fd: i32) -> bool {
    init().is_ok_and(|p| sys::fd_file_id(fd).is_ok_and(|id| id == p.exe))
}

/// True when `pid` (a process or thread) runs a VMM: its memory is the VMM's, not a guest's.
pub fn is_vmm(pid: i32) -> bool {
    init().map_or(true, |p| p.is_vmm(pid))
}

/// The path descriptor `fd` of this process names (its `self/fd/N` link).
pub fn fd_path(fd: i32) -> Option<String> {
    let p = init().ok()?;
    String::from_utf8(sys::readlink_at(p.dir, &format!("self/fd/{fd}")).ok()?).ok()
}

/// Opens again, with `flags` exactly, the file this process's descriptor `fd` refers to (through
/// the VMM's procfs: `self/fd/N`); Linux's return convention.
pub fn reopen(fd: i32, flags: i32) -> i64 {
    let Ok(p) = init() else {
        return -(libc::EACCES as i64);
    };
    match std::ffi::CString::new(format!("self/fd/{fd}")) {
        Ok(c) => sys::openat_raw(p.dir, &c, flags, 0),
        Err(_) => -(libc::EINVAL as i64),
    }
}

/// The whole text of procfs file `fd` (any descriptor of it, O_PATH too), read through a
/// descriptor of its own above `floor` (never one the guest could name).
pub fn read_text(fd: i32, floor: i32) -> Option<String> {
    let r = sys::create_high(floor, || match reopen(fd, libc::O_RDONLY | libc::O_CLOEXEC) {
        r if r < 0 => Err(std::io::Error::from_raw_os_error(-r as i32)),
        r => Ok(r as i32),
    })
    .ok()?;
    let text = sys::read_all(r);
    sys::close(r);
    String::from_utf8(text.ok()?).ok()
}

/// The guest's highest open descriptor (those below `floor` in this process's `fd` directory).
pub fn highest_guest_fd(floor: i32) -> Option<u64> {
    let p = init().ok()?;
    let dir = sys::create_high(floor, || {
        sys::open_at(p.dir, "self/fd", libc::O_RDONLY | libc::O_DIRECTORY)
    })
    .ok()?;
    let names = sys::dir_names(dir);
    sys::close(dir);
    names
        .ok()?
        .iter()
        .filter_map(|n| n.parse::<u64>().ok())
        .filter(|&n| n < floor as u64)
        .max()
}

/// True when `pid` is this process or one of its threads (a host tid).
pub fn is_own(pid: i32) -> bool {
    init().map_or(pid == std::process::id() as i32, |p| p.is_own(pid))
}

/// The remote window of VMM `pid`: the mapping of its guest memory that starts at APP_BASE, read
/// from its maps.
pub fn vmm_window(pid: i32) -> Option<(u64, u64)> {
    let p = init().ok()?;
    let maps = crate::procread::read(p.dir, &format!("{pid}/maps")).ok()?;
    String::from_utf8_lossy(&maps).lines().find_map(|l| {
        let (a, b) = l.split_whitespace().next()?.split_once('-')?;
        let (a, b) = (u64::from_str_radix(a, 16).ok()?, u64::from_str_radix(b, 16).ok()?);
        (a == crate::memory::APP_BASE).then_some((a, b))
    })
}

/// Classifies descriptor `fd` of this process (any file; only procfs files are looked at).
pub fn classify_fd(fd: i32) -> Verdict {
    match sys::fs_type(fd) {
        Ok(PROC_SUPER_MAGIC) => {}
        Ok(_) => return Verdict::Allow,
        Err(_) => return Verdict::Refuse,
    }
    let Ok(p) = init() else {
        return Verdict::Refuse;
    };
    match inner_path(p, fd) {
        Some(path) => {
            let comps: Vec<&str> = path.split('/').filter(|c| !c.is_empty() && *c != ".").collect();
            classify(&comps, p)
        }
        None => Verdict::Refuse,
    }
}

/// The path of `fd` inside its procfs, e.g. "4242/mem".
fn inner_path(p: &Proc, fd: i32) -> Option<String> {
    let link = String::from_utf8(sys::readlink_at(p.dir, &format!("self/fd/{fd}")).ok()?).ok()?;
    if !link.starts_with('/') || link.ends_with(" (deleted)") {
        return None;
    }
    let (root, point) = match sys::mount_of_fd(fd) {
        Ok(m) => (m.magic as i64 == PROC_SUPER_MAGIC).then_some((m.root, m.point))?,
        // A kernel without statmount (before 6.8): the fd's mount id and the mount table, read
        // where the guest cannot see the descriptors (`procread`).
        Err(_) => {
            let info = crate::procread::read(p.dir, &format!("self/fdinfo/{fd}")).ok()?;
            let mnt: u64 = String::from_utf8_lossy(&info)
                .lines()
                .find_map(|l| l.strip_prefix("mnt_id:"))?
                .trim()
                .parse()
                .ok()?;
            let mountinfo = crate::procread::read(p.dir, "self/mountinfo").ok()?;
            mount_of(&String::from_utf8_lossy(&mountinfo), mnt)?
        }
    };
    let rel = if point == "/" {
        link.as_str()
    } else {
        let r = link.strip_prefix(point.as_str())?;
        if !(r.is_empty() || r.starts_with('/')) {
            return None;
        }
        r
    };
    Some(format!("{root}/{rel}"))
}

/// (root, mount point) of procfs mount `id` in a mountinfo text; None when it is not procfs.
fn mount_of(mountinfo: &str, id: u64) -> Option<(String, String)> {
    mountinfo.lines().find_map(|l| {
        let (head, tail) = l.split_once(" - ")?;
        let f: Vec<&str> = head.split(' ').collect();
        if f.len() < 5 || f[0].parse::<u64>().ok()? != id {
            return None;
        }
        (tail.split(' ').next() == Some("proc")).then(|| (unescape(f[3]), unescape(f[4])))
    })
}

/// Undoes mountinfo's octal escapes (\040 for a space…).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The rules, on the components of a path inside procfs.
pub fn classify(comps: &[&str], facts: &impl Facts) -> Verdict {
    let Some(&first) = comps.first() else {
        return Verdict::Allow;
    };
    let own = std::process::id() as i32;
    let pid = match first {
        "self" | "thread-self" => own,
        n => match n.parse::<i32>() {
            Ok(pid) if pid > 0 => pid,
            _ => return Verdict::Allow, // /proc/cpuinfo, /proc/sys/…: not a process's
        },
    };
    let mut rest = &comps[1..];
    let mut task = pid;
    let mut named_task = None;
    if rest.len() >= 2 && rest[0] == "task" {
        match rest[1].parse::<i32>() {
            Ok(t) => task = t,
            Err(_) => return Verdict::Allow,
        }
        named_task = Some(task);
        rest = &rest[2..];
    }
    let verdict = match rest {
        [] => Verdict::Allow,
        ["auxv"] if facts.is_own(pid) => Verdict::OwnAuxv,
        ["personality"] if facts.is_own(pid) => Verdict::OwnPersonality,
        ["status"] if facts.is_own(pid) => Verdict::OwnStatus(named_task),
        ["stat"] if facts.is_own(pid) => Verdict::OwnStat(named_task),
        ["exe"] if facts.is_own(pid) => Verdict::OwnExe,
        ["mem" | "map_files" | "pagemap" | "auxv" | "syscall" | "smaps" | "smaps_rollup" | "numa_maps", ..] => {
            Verdict::Refuse
        }
        ["maps"] if facts.is_own(pid) && facts.is_own(task) => Verdict::OwnMaps,
        ["maps", ..] => Verdict::Refuse,
        ["fd" | "fdinfo"] => Verdict::FdDir,
        ["fd" | "fdinfo", n, ..] => match n.parse::<i64>() {
            Ok(fd) if fd >= 0 && fd < facts.floor() as i64 => Verdict::Allow,
            _ => Verdict::Refuse,
        },
        _ => Verdict::Allow,
    };
    // Whether another process is a VMM is asked only when it matters (it reads its exe, maybe
    // its maps): other processes' files are theirs, as natively.
    if verdict == Verdict::Allow || pid == own || facts.is_vmm(pid) {
        verdict
    } else {
        Verdict::Allow
    }
}

/// Removes the entries named by a number ≥ `floor` from the getdents/getdents64 records in `buf`
/// (both start with ino, off, reclen: u64, u64, u16; the name is at byte `name_at`: 18 for
/// getdents, 19 for getdents64, after d_type); returns the new length.
pub fn hide_high_fds(buf: &mut [u8], name_at: usize, floor: i32) -> usize {
    let mut rd = 0;
    let mut wr = 0;
    while rd + name_at < buf.len() {
        let reclen = u16::from_le_bytes([buf[rd + 16], buf[rd + 17]]) as usize;
        if reclen <= name_at || rd + reclen > buf.len() {
            break;
        }
        let name = &buf[rd + name_at..rd + reclen];
        let name = &name[..name.iter().position(|&c| c == 0).unwrap_or(name.len())];
        let hidden = std::str::from_utf8(name)
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
            .is_some_and(|fd| fd >= floor as i64);
        if !hidden {
            buf.copy_within(rd..rd + reclen, wr);
            wr += reclen;
        }
        rd += reclen;
    }
    wr
}

#[cfg(test)]
mod tests {
    use super::*;

    struct F;
    impl Facts for F {
        fn is_vmm(&self, pid: i32) -> bool {
            pid == 77 || pid == std::process::id() as i32
        }
        fn is_own(&self, pid: i32) -> bool {
            pid == std::process::id() as i32
        }
        fn floor(&self) -> i32 {
            1000
        }
    }

    fn v(path: &str) -> Verdict {
        let c: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
        classify(&c, &F)
    }

    #[test]
    fn vmm_memory_and_fds_are_refused_wherever_procfs_is_mounted() {
        let me = std::process::id();
        for p in [
            "self/mem".to_string(),
            format!("{me}/mem"),
            format!("{me}/task/{me}/mem"),
            "77/mem".into(),
            "77/task/78/map_files".into(),
            "77/maps".into(),
            "self/fd/1000".into(),
            "77/fdinfo/1003".into(),
            "self/smaps".into(),
            "77/auxv".into(),
            "self/map_files".into(),
        ] {
            assert_eq!(v(&p), Verdict::Refuse, "{p}");
        }
        assert_eq!(v(&format!("{me}/maps")), Verdict::OwnMaps);
        assert_eq!(v("self/auxv"), Verdict::OwnAuxv);
        assert_eq!(v("self/personality"), Verdict::OwnPersonality);
        assert_eq!(v(&format!("{me}/task/{me}/auxv")), Verdict::OwnAuxv);
        assert_eq!(v(&format!("{me}/task/{me}/maps")), Verdict::OwnMaps);
        assert_eq!(v("self/fd"), Verdict::FdDir);
        assert_eq!(v("self/status"), Verdict::OwnStatus(None));
        assert_eq!(v(&format!("{me}/stat")), Verdict::OwnStat(None));
        for p in [
            "self/exe".to_string(),
            format!("{me}/exe"),
            format!("{me}/task/{me}/exe"),
        ] {
            assert_eq!(v(&p), Verdict::OwnExe, "{p}");
        }
        assert_eq!(v("77/exe"), Verdict::Allow);
        assert_eq!(
            v(&format!("{me}/task/{me}/status")),
            Verdict::OwnStatus(Some(me as i32))
        );
        for p in [
            "",
            "cpuinfo",
            "sys/kernel/pid_max",
            "self/statm",
            "self/fd/3",
            "55/mem",
            "77/status",
        ] {
            assert_eq!(v(p), Verdict::Allow, "{p}");
        }
    }

    #[test]
    fn mountinfo_gives_root_and_mount_point() {
        let mi = "22 27 0:21 / /proc rw,relatime - proc proc rw\n\
                  40 27 0:50 /123 /tmp/my\\040p rw - proc proc rw\n\
                  41 27 0:51 / /tmp/x rw - tmpfs tmpfs rw\n";
        assert_eq!(mount_of(mi, 22), Some(("/".into(), "/proc".into())));
        assert_eq!(mount_of(mi, 40), Some(("/123".into(), "/tmp/my p".into())));
        assert_eq!(mount_of(mi, 41), None);
    }

    #[test]
    fn high_fds_are_hidden_from_listings() {
        let mut buf = Vec::new();
        for name in ["1", "1000", "2", "1001"] {
            let reclen = (19 + name.len() + 1).div_ceil(8) * 8;
            let mut rec = vec![0u8; reclen];
            rec[16..18].copy_from_slice(&(reclen as u16).to_le_bytes());
            rec[18] = libc::DT_LNK;
            rec[19..19 + name.len()].copy_from_slice(name.as_bytes());
            buf.extend(rec);
        }
        let n = hide_high_fds(&mut buf, 19, 1000);
        assert_eq!(n, 48);
        assert_eq!(&buf[19..20], b"1");
        assert_eq!(&buf[24 + 19..24 + 20], b"2");
    }
}

#[cfg(test)]
mod live {
    use super::*;

    #[test]
    fn this_process_fd_directory_and_mem_are_recognised() {
        let fd = sys::open_at(
            libc::AT_FDCWD,
            "/proc/self/fd",
            libc::O_RDONLY | libc::O_DIRECTORY,
        )
        .unwrap_or(-1);
        let p = init().map(|p| inner_path(p, fd));
        assert_eq!(classify_fd(fd), Verdict::FdDir, "{p:?}");
        sys::close(fd);
        let fd = sys::open_at(libc::AT_FDCWD, "/proc/self/mem", libc::O_RDONLY).unwrap_or(-1);
        assert_eq!(classify_fd(fd), Verdict::Refuse);
        sys::close(fd);
        let fd = sys::open_at(libc::AT_FDCWD, "/proc/self/status", libc::O_RDONLY).unwrap_or(-1);
        assert_eq!(classify_fd(fd), Verdict::OwnStatus(None));
        assert!(read_text(fd, 1000).is_some_and(|t| t.contains("Threads:")));
        sys::close(fd);
        let fd = sys::open_at(libc::AT_FDCWD, "/proc/cpuinfo", libc::O_RDONLY).unwrap_or(-1);
        assert_eq!(classify_fd(fd), Verdict::Allow);
        sys::close(fd);
    }
}
