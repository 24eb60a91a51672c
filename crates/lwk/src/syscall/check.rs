//! Checks every pointer and length of a delegated call against the application window before the
//! proxy performs it: a pointer outside gets EFAULT, never VMM memory.

use super::layout::{Arg, Len};
use crate::memory::GuestMemory;

pub const EFAULT: i64 = -(libc::EFAULT as i64);
pub const EBADF: i64 = -(libc::EBADF as i64);
pub const EACCES: i64 = -(libc::EACCES as i64);

/// The largest path read from the guest.
const PATH_MAX: usize = 4096;

/// Paths the guest may not name: the obvious spellings of a VMM's memory and fds, refused before
/// any call. Only a first net: what an open really reached (symbolic links, relative paths, a
/// second procfs mount) is decided from the opened file by `procfs::classify_fd`, which also
/// covers every other process of the run.
pub fn forbidden_path(path: &[u8], floor: i32) -> bool {
    let raw = String::from_utf8_lossy(path);
    let p = lexical(&raw);
    let high = |n: &str| n.parse::<i64>().map_or(true, |fd| fd < 0 || fd >= floor as i64);
    if let Some(rest) = p.strip_prefix("/dev/fd/") {
        return rest.split('/').find(|c| !c.is_empty()).is_some_and(high);
    }
    let Some(rest) = p.strip_prefix("/proc/") else {
        return false;
    };
    let comps: Vec<&str> = rest.split('/').filter(|c| !c.is_empty() && *c != ".").collect();
    let Some(first) = comps.first() else {
        return false;
    };
    if !(*first == "self" || *first == "thread-self" || first.parse::<u32>().is_ok()) {
        return false;
    }
    let mut entry = &comps[1..];
    if entry.len() >= 2 && entry[0] == "task" {
        entry = &entry[2..];
    }
    match entry {
        // (auxv is decided from the opened file: the guest's own is answered, a VMM's refused.)
        ["mem" | "map_files" | "pagemap" | "syscall", ..] => true,
        ["fd" | "fdinfo", n, ..] => high(n),
        _ => false,
    }
}

/// An absolute `path` with its `.` and `..` components resolved by name (`/proc/self/../self/fd/9`
/// is `/proc/self/fd/9`, which the kernel reaches too: `..` of `/proc/PID` is `/proc`); other
/// paths as they are. Without it a `..` spelled its way past the net above (issue #16).
fn lexical(path: &str) -> std::borrow::Cow<'_, str> {
    if !path.starts_with('/') || !path.split('/').any(|c| c == "." || c == "..") {
        return std::borrow::Cow::Borrowed(path);
    }
    let mut out: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    let mut s = String::from("/");
    s.push_str(&out.join("/"));
    if path.ends_with('/') && !out.is_empty() {
        s.push('/');
    }
    std::borrow::Cow::Owned(s)
}

/// Resolves a length specification; a length the call reads through a pointer (`DerefU32`) is
/// the value [`check`] copied (`lens`), the one the kernel will read.
fn length(mem: &GuestMemory, a: &[u64; 6], len: Len, lens: &[Option<u32>; 6]) -> Result<u64, i64> {
    if let Len::DerefU32(i) = len {
        if let Some(n) = lens[i] {
            return Ok(n as u64);
        }
    }
    Ok(match len {
        Len::Arg(i) => a[i],
        Len::Fixed(n) => n,
        Len::ArgTimes(i, n) => a[i].checked_mul(n).ok_or(EFAULT)?,
        Len::ArgPlus(i, n) => a[i].checked_add(n).ok_or(EFAULT)?,
        Len::Bits(i) => a[i].saturating_sub(1).div_ceil(64).checked_mul(8).ok_or(EFAULT)?,
        Len::DerefU32(i) => {
            if a[i] == 0 {
                0
            } else if mem.in_app(a[i], 4) {
                let mut b = [0u8; 4];
                mem.read(a[i], &mut b);
                u32::from_le_bytes(b) as u64
            } else {
                return Err(EFAULT);
            }
        }
    })
}

fn buf(mem: &GuestMemory, addr: u64, len: u64, optional: bool) -> Result<(), i64> {
    if addr == 0 && (optional || len == 0) {
        return Ok(());
    }
    if len == 0 {
        // A zero-length buffer is never dereferenced, but an address outside stays suspicious.
        return if mem.in_app(addr, 1) || addr == 0 {
            Ok(())
        } else {
            Err(EFAULT)
        };
    }
    if mem.in_app(addr, len) {
        Ok(())
    } else {
        Err(EFAULT)
    }
}

/// The path at `addr`, checked by name and copied: the kernel is given the copy, so another
/// guest thread cannot swap the checked name for `/proc/self/fd/N` (a VMM fd) before the kernel
/// reads it. None for an optional NULL path.
fn path(
    mem: &GuestMemory,
    addr: u64,
    optional: bool,
    fd_floor: i32,
) -> Result<Option<std::ffi::CString>, i64> {
    if addr == 0 && optional {
        return Ok(None);
    }
    // A path with no NUL in its first PATH_MAX bytes is ENAMETOOLONG, as Linux's getname says.
    let p = mem.read_cstr_or(addr, PATH_MAX).map_err(|e| match e {
        crate::memory::CstrError::Fault => EFAULT,
        crate::memory::CstrError::TooLong => -(libc::ENAMETOOLONG as i64),
    })?;
    if forbidden_path(&p, fd_floor) {
        return Err(EACCES);
    }
    std::ffi::CString::new(p).map(Some).map_err(|_| EFAULT)
}

/// Entry names the procfs rules care about (`procfs::classify`): a name ending in one of them, or
/// in a number (`fd/N`), may reach a VMM's memory or fds however it is spelled — relative to a
/// procfs directory fd or working directory, or through a procfs mounted elsewhere — and is
/// resolved before the call (`Kernel::path_reaches_vmm`).
pub fn worth_resolving(p: &[u8]) -> bool {
    const ENTRIES: [&[u8]; 4] = [b"mem", b"map_files", b"pagemap", b"syscall"];
    let mut comps = p.split(|&c| c == b'/').filter(|c| !c.is_empty() && *c != b".");
    let last = comps.clone().next_back();
    last.is_some_and(|l| l.iter().all(u8::is_ascii_digit)) || comps.any(|c| ENTRIES.contains(&c))
}

/// A path argument the kernel will look up, as copied: its index, the dirfd it is relative to
/// (AT_FDCWD unless the argument before it is a descriptor) and the name.
#[derive(Debug)]
pub struct PathArg {
    pub index: usize,
    pub dirfd: i32,
    pub name: std::ffi::CString,
}

/// Arguments that passed the check, with indirect arrays (iovecs, msghdr) copied into VMM memory:
/// the kernel reads the copies, so another guest thread cannot swap a checked pointer for a VMM
/// address between the check and the call.
#[derive(Debug, Default)]
pub struct Checked {
    pub args: [u64; 6],
    iov: Vec<u64>,
    msg: Option<Box<[u64; 7]>>,
    /// A sent msghdr's control buffer, copied: the kernel reads the fds that were checked.
    control: Vec<u8>,
    /// The duplicates above the floor that `control`'s SCM_RIGHTS messages name instead of the
    /// guest's numbers (`alias_rights`); closed when the call is done with them.
    passed: Vec<std::os::fd::OwnedFd>,
    /// The guest's msghdr, for results the kernel writes into the copy (recvmsg).
    msg_guest: Option<u64>,
    /// Copied pollfd arrays and fd_sets: (the guest's address, the copy), written back after
    /// the call (pollfds: their revents; fd_sets: whole, when the call succeeded).
    polled: Option<(u64, Vec<u64>)>,
    fd_sets: Vec<(u64, Vec<u64>)>,
    /// Length words the kernel reads and writes through a pointer (accept's *addrlen,
    /// getsockopt's *optlen): (argument, the guest's address, the copy the kernel gets). Read
    /// once: another guest thread growing the guest's word after the check changes nothing.
    len_words: Vec<(usize, u64, Box<u32>)>,
    /// Path arguments, copied; the kernel reads the copies.
    pub paths: Vec<PathArg>,
}

impl Checked {
    /// The copied length words by argument.
    fn lens(&self) -> [Option<u32>; 6] {
        let mut l = [None; 6];
        for (i, _, v) in &self.len_words {
            l[*i] = Some(**v);
        }
        l
    }

    /// The checked iovec array (base, length pairs), when the call has one.
    pub fn iovecs(&self) -> &[u64] {
        &self.iov
    }

    /// Copies what the kernel wrote into the copies back to the guest's memory: a received
    /// msghdr's lengths and flags, pollfds' revents (as Linux, whatever the result), fd_sets when
    /// the call returned `r` ≥ 0 (as Linux).
    pub fn finish(&self, mem: &GuestMemory, r: i64) {
        if let (Some(m), Some(g)) = (&self.msg, self.msg_guest) {
            let namelen = (m[1] as u32).to_le_bytes();
            mem.write(g + 8, &namelen);
            mem.write_u64(g + 40, m[5]);
            mem.write(g + 48, &(m[6] as u32).to_le_bytes());
        }
        if let Some((g, fds)) = &self.polled {
            for (k, pfd) in fds.iter().enumerate() {
                mem.write(g + 8 * k as u64 + 6, &((pfd >> 48) as u16).to_le_bytes());
            }
        }
        if r >= 0 {
            for (_, g, v) in &self.len_words {
                mem.write(*g, &v.to_le_bytes());
            }
            for (g, set) in &self.fd_sets {
                for (k, w) in set.iter().enumerate() {
                    mem.write_u64(g + 8 * k as u64, *w);
                }
            }
        }
    }
}

/// Reads an iovec array of `n` entries at `v` into host memory without bounding its entries
/// (process_vm's remote iovecs, which name another address space).
pub fn copy_iov_unchecked(mem: &GuestMemory, v: u64, n: u64) -> Result<Vec<u64>, i64> {
    if n > 1024 {
        return Err(-(libc::EINVAL as i64));
    }
    buf(mem, v, n * 16, n == 0)?;
    Ok((0..n)
        .flat_map(|k| [mem.read_u64(v + 16 * k), mem.read_u64(v + 16 * k + 8)])
        .collect())
}

/// Reads and checks an iovec array of `n` entries at `v` into host memory.
fn copy_iov(mem: &GuestMemory, v: u64, n: u64) -> Result<Vec<u64>, i64> {
    if n > 1024 {
        return Err(-(libc::EINVAL as i64));
    }
    buf(mem, v, n * 16, n == 0)?;
    let mut out = Vec::with_capacity(2 * n as usize);
    for k in 0..n {
        let (base, len) = (mem.read_u64(v + 16 * k), mem.read_u64(v + 16 * k + 8));
        buf(mem, base, len, false)?;
        out.extend([base, len]);
    }
    Ok(out)
}

/// The most control bytes a sendmsg may pass (Linux refuses more than its `optmem_max`, 20 KiB by
/// default, with ENOBUFS).
const CONTROL_MAX: u64 = 1 << 20;

/// Copies the control buffer of a message being sent (`len` bytes at `addr`, inside the window)
/// and holds the fds of its SCM_RIGHTS messages to the guest's range: a VMM fd (at or above the
/// floor: KVM's, the vCPUs' whose mmap is the live `kvm_run`, the procfs directory) passed to a
/// socket would come back to the guest as one of its own. The walk is the kernel's
/// (`__scm_send`): 8-byte-aligned headers, each at least 16 bytes and inside the buffer; a
/// malformed one stops it, as the kernel then refuses the message (EINVAL) without passing fds.
fn sent_control(mem: &GuestMemory, addr: u64, len: u64, fd_floor: i32) -> Result<Vec<u8>, i64> {
    if len > CONTROL_MAX {
        return Err(-(libc::ENOBUFS as i64));
    }
    let mut ctl = vec![0u8; len as usize];
    mem.read(addr, &mut ctl);
    vmm_fds_in_control(&ctl, fd_floor)?;
    Ok(ctl)
}

/// The byte offsets of the fds of `ctl`'s SCM_RIGHTS messages. The walk is the kernel's
/// (`__scm_send`): 8-byte-aligned headers, each at least 16 bytes and inside the buffer; a
/// malformed one stops it, as the kernel then refuses the message (EINVAL) without passing fds.
fn rights_offsets(ctl: &[u8]) -> Vec<usize> {
    const HDR: usize = 16; // cmsg_len (8), cmsg_level (4), cmsg_type (4)
    let u32_at = |o: usize| u32::from_le_bytes([ctl[o], ctl[o + 1], ctl[o + 2], ctl[o + 3]]);
    let (mut off, mut out) = (0usize, Vec::new());
    while off + HDR <= ctl.len() {
        let mut w = [0u8; 8];
        w.copy_from_slice(&ctl[off..off + 8]);
        let clen = u64::from_le_bytes(w);
        if clen < HDR as u64 || clen > (ctl.len() - off) as u64 {
            break;
        }
        let clen = clen as usize;
        let (level, kind) = (u32_at(off + 8) as i32, u32_at(off + 12) as i32);
        if level == libc::SOL_SOCKET && kind == libc::SCM_RIGHTS {
            out.extend((off + HDR..).step_by(4).take_while(|p| p + 4 <= off + clen));
        }
        off += clen.div_ceil(8) * 8;
    }
    out
}

/// EBADF when an SCM_RIGHTS message of `ctl` names an fd outside `[0, floor)`.
fn vmm_fds_in_control(ctl: &[u8], fd_floor: i32) -> Result<(), i64> {
    for p in rights_offsets(ctl) {
        let fd = i32::from_le_bytes([ctl[p], ctl[p + 1], ctl[p + 2], ctl[p + 3]]);
        if fd < 0 || fd >= fd_floor {
            return Err(EBADF);
        }
    }
    Ok(())
}

/// Replaces the fds of the SCM_RIGHTS messages of the checked copy `ctl` by duplicates at or
/// above the floor, made under `sys::low_fds`; the caller closes them once the call returned.
///
/// The kernel looks the passed numbers up when the call runs, and sendmsg takes no lock of the
/// LWK (it may wait for the peer as long as it likes). A number the guest names can, for a few
/// microseconds, hold a descriptor of the VMM's that is on its way above the floor — a new vCPU's
/// fd, whose `kvm_run` page sets the vCPU's registers: a guest looping sendmsg of that number to
/// itself received the vCPU and ran its own code in ring 0 (issue #16). The duplicates are made
/// while no VMM descriptor is in the guest's range, so they are the guest's own files.
fn alias_rights(ctl: &mut [u8], fd_floor: i32) -> Result<Vec<std::os::fd::OwnedFd>, i64> {
    let offsets = rights_offsets(ctl);
    if offsets.is_empty() {
        return Ok(Vec::new());
    }
    let _low = crate::sys::low_fds();
    let mut aliases = Vec::with_capacity(offsets.len());
    for p in offsets {
        let fd = i32::from_le_bytes([ctl[p], ctl[p + 1], ctl[p + 2], ctl[p + 3]]);
        let alias = crate::sys::dup_high(fd, fd_floor).map_err(|_| EBADF)?;
        use std::os::fd::AsRawFd;
        ctl[p..p + 4].copy_from_slice(&alias.as_raw_fd().to_le_bytes());
        aliases.push(alias);
    }
    Ok(aliases)
}

/// Checks the arguments `a` of a call with layout `layout`; Err holds the negative errno to return.
pub fn check(mem: &GuestMemory, layout: &[Arg], a: &[u64; 6], fd_floor: i32) -> Result<Checked, i64> {
    let mut c = Checked {
        args: *a,
        ..Checked::default()
    };
    // Length words read through a pointer: copied first, and the kernel reads the copy.
    for arg in layout {
        if let Arg::Buf(Len::DerefU32(i)) | Arg::OptBuf(Len::DerefU32(i)) = *arg {
            if a[i] != 0 && !c.len_words.iter().any(|w| w.0 == i) {
                if !mem.in_app(a[i], 4) {
                    return Err(EFAULT);
                }
                let mut b = [0u8; 4];
                mem.read(a[i], &mut b);
                let copy = Box::new(u32::from_le_bytes(b));
                c.args[i] = &*copy as *const u32 as u64;
                c.len_words.push((i, a[i], copy));
            }
        }
    }
    let lens = c.lens();
    for (i, arg) in layout.iter().enumerate() {
        let v = a[i];
        match *arg {
            Arg::Val => {}
            Arg::Fd => {
                let fd = v as i32;
                if fd >= fd_floor {
                    return Err(EBADF);
                }
            }
            Arg::Buf(l) => buf(mem, v, length(mem, a, l, &lens)?, false)?,
            Arg::OptBuf(l) => buf(mem, v, length(mem, a, l, &lens)?, true)?,
            Arg::Path | Arg::OptPath => {
                if let Some(name) = path(mem, v, *arg == Arg::OptPath, fd_floor)? {
                    c.args[i] = name.as_ptr() as u64;
                    let dirfd = if i > 0 && layout[i - 1] == Arg::Fd {
                        a[i - 1] as i32
                    } else {
                        libc::AT_FDCWD
                    };
                    c.paths.push(PathArg {
                        index: i,
                        dirfd,
                        name,
                    });
                }
            }
            Arg::Iov(ci) => {
                c.iov = copy_iov(mem, v, a[ci])?;
                c.args[i] = if c.iov.is_empty() {
                    v
                } else {
                    c.iov.as_ptr() as u64
                };
            }
            Arg::MsgHdr(send) => {
                // struct msghdr: name, namelen(u32), iov, iovlen, control, controllen, flags.
                buf(mem, v, 56, false)?;
                let mut m = [0u64; 7];
                for (k, w) in m.iter_mut().enumerate() {
                    *w = mem.read_u64(v + 8 * k as u64);
                }
                buf(mem, m[0], m[1] & 0xffff_ffff, true)?;
                buf(mem, m[4], m[5], true)?;
                c.iov = copy_iov(mem, m[2], m[3])?;
                if !c.iov.is_empty() {
                    m[2] = c.iov.as_ptr() as u64;
                }
                if send && m[4] != 0 && m[5] != 0 {
                    c.control = sent_control(mem, m[4], m[5], fd_floor)?;
                    c.passed = alias_rights(&mut c.control, fd_floor)?;
                    m[4] = c.control.as_ptr() as u64;
                }
                let boxed = Box::new(m);
                c.args[i] = boxed.as_ptr() as u64;
                c.msg = Some(boxed);
                c.msg_guest = Some(v);
            }
            Arg::PollFds(ci) => {
                let n = a[ci];
                // Linux refuses more entries than RLIMIT_NOFILE allows fds.
                if n > crate::fds::guest_limit().0 {
                    return Err(-(libc::EINVAL as i64));
                }
                buf(mem, v, n.checked_mul(8).ok_or(EFAULT)?, n == 0)?;
                let fds: Vec<u64> = (0..n).map(|k| mem.read_u64(v + 8 * k)).collect();
                if fds.iter().any(|&p| p as u32 as i32 >= fd_floor) {
                    return Err(EBADF);
                }
                if n > 0 {
                    c.args[i] = fds.as_ptr() as u64;
                    c.polled = Some((v, fds));
                }
            }
            Arg::FdSet(ni) => {
                // Linux: a negative count is EINVAL; the kernel reads ⌈n / 64⌉ words of a set.
                let n = a[ni] as i32;
                if n < 0 {
                    return Err(-(libc::EINVAL as i64));
                }
                if v == 0 {
                    continue;
                }
                // The kernel clamps the count to its fd table; the VMM's ends at the top of its
                // range (no bit above can name an fd): a huge count costs no huge copy.
                let n = n.min(fd_floor.saturating_add(crate::fds::RESERVED as i32).max(0));
                let words = (n as u64).div_ceil(64);
                buf(mem, v, words * 8, false)?;
                let set: Vec<u64> = (0..words).map(|k| mem.read_u64(v + 8 * k)).collect();
                // The VMM's fds are not the guest's: a bit at or above the floor is EBADF, as a
                // closed fd's is natively.
                let floor = fd_floor.max(0) as u64;
                let above = set.iter().enumerate().any(|(k, &w)| {
                    let first = 64 * k as u64;
                    if first + 64 <= floor {
                        return false;
                    }
                    let keep = floor.saturating_sub(first);
                    w >> keep != 0
                });
                if above {
                    return Err(EBADF);
                }
                c.args[i] = set.as_ptr() as u64;
                c.fd_sets.push((v, set));
            }
        }
    }
    Ok(c)
}

/// [`check`], then the page protections of what the call will copy (issue #14): every buffer must
/// be accessible to user code and those the kernel writes (`layout::written`) writable, or the
/// call gets EFAULT as on Linux, whose copy_to_user/copy_from_user fault on the same pages. A
/// buffer that is only partly accessible gets EFAULT where Linux may return a short count.
pub fn check_call(
    mem: &GuestMemory,
    nr: i64,
    layout: &[Arg],
    a: &[u64; 6],
    fd_floor: i32,
) -> Result<Checked, i64> {
    let c = check(mem, layout, a, fd_floor)?;
    let written = super::layout::written(nr);
    let ok = |addr: u64, len: u64, write: bool| {
        if addr == 0 || len == 0 || mem.user_can(addr, len, write) {
            Ok(())
        } else {
            Err(EFAULT)
        }
    };
    for (i, arg) in layout.iter().enumerate() {
        match *arg {
            Arg::Buf(l) | Arg::OptBuf(l) => ok(a[i], length(mem, a, l, &c.lens())?, written.contains(&i))?,
            // The kernel writes revents and the sets back.
            Arg::PollFds(ci) => ok(a[i], a[ci].saturating_mul(8), true)?,
            Arg::FdSet(ni) => {
                let n = (a[ni] as i32).clamp(0, fd_floor.saturating_add(crate::fds::RESERVED as i32).max(0));
                ok(a[i], (n as u64).div_ceil(64) * 8, true)?
            }
            Arg::Iov(_) | Arg::MsgHdr(_) => {
                // recvmsg: the LWK writes the msghdr's lengths and flags back (`finish`) and the
                // kernel writes the name and control buffers: writable, or EFAULT as natively
                // (the VMM died writing a guest msghdr in a read-only shared mapping, issue #16).
                if let (Arg::MsgHdr(false), Some(m)) = (*arg, &c.msg) {
                    ok(a[i], 56, true)?;
                    ok(m[0], m[1] & 0xffff_ffff, true)?;
                    ok(m[4], m[5], true)?;
                }
                let into = matches!(
                    nr,
                    libc::SYS_readv | libc::SYS_preadv | libc::SYS_preadv2 | libc::SYS_recvmsg
                );
                for pair in c.iov.chunks(2) {
                    if let [base, len] = *pair {
                        ok(base, len, into)?;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iovecs_are_checked_and_copied_out_of_the_guests_reach() {
        use crate::memory::{GuestMemory, APP_BASE, PAGE_2M};
        // The only unit test that maps guest memory (fixed addresses: one at a time).
        let mem = GuestMemory::new(2 * PAGE_2M).unwrap_or_else(|e| panic!("{e}"));
        let layout = [Arg::Fd, Arg::Iov(2), Arg::Val];
        mem.write_u64(APP_BASE, APP_BASE + 0x100);
        mem.write_u64(APP_BASE + 8, 10);
        let c = check(&mem, &layout, &[1, APP_BASE, 1, 0, 0, 0], 1000).unwrap_or_else(|e| panic!("{e}"));
        assert_ne!(c.args[1], APP_BASE, "the kernel must read a VMM-owned copy");
        // SAFETY: args[1] points at the copy owned by `c`, which is alive: two u64 per iovec.
        let copy = unsafe { std::slice::from_raw_parts(c.args[1] as *const u64, 2) };
        assert_eq!(copy, &[APP_BASE + 0x100, 10]);
        mem.write_u64(APP_BASE, 0x7e00_0000_0000);
        assert_eq!(
            check(&mem, &layout, &[1, APP_BASE, 1, 0, 0, 0], 1000).err(),
            Some(EFAULT)
        );
        assert_eq!(
            check(&mem, &layout, &[1000, APP_BASE, 1, 0, 0, 0], 1000).err(),
            Some(EBADF)
        );
        // A length word read through a pointer (getsockname's *addrlen) is copied: the kernel
        // reads the copy, and the guest's word gets the kernel's answer after the call.
        let layout = [Arg::Fd, Arg::OptBuf(Len::DerefU32(2)), Arg::OptBuf(Len::Fixed(4))];
        let (buf, len) = (APP_BASE + 0x200, APP_BASE + 0x300);
        mem.write(len, &16u32.to_le_bytes());
        let c = check(&mem, &layout, &[3, buf, len, 0, 0, 0], 1000).unwrap_or_else(|e| panic!("{e}"));
        assert_ne!(
            c.args[2], len,
            "the kernel must read a VMM-owned copy of the length"
        );
        mem.write(len, &4096u32.to_le_bytes()); // another guest thread grows it: no effect
                                                // SAFETY: args[2] points at the u32 copy owned by `c`, which is alive.
        assert_eq!(unsafe { *(c.args[2] as *const u32) }, 16);
        // SAFETY: as above; the kernel would write its answer there.
        unsafe { *(c.args[2] as *mut u32) = 8 };
        c.finish(&mem, 0);
        let mut b = [0u8; 4];
        mem.read(len, &mut b);
        assert_eq!(u32::from_le_bytes(b), 8);
    }

    #[test]
    fn proc_paths_that_reach_the_vmm_are_forbidden() {
        for p in [
            "/proc/self/mem",
            "/proc/self/fd/1000",
            "/proc/thread-self/mem",
            "/proc/77/mem",
            "/proc/77/task/1/mem",
            "/proc/123/map_files/",
            "/dev/fd/1000",
            "/proc/1/task/2/mem",
            "/proc/self/fdinfo/1001",
        ] {
            assert!(forbidden_path(p.as_bytes(), 1000), "{p}");
        }
        for p in [
            "/etc/passwd",
            "/proc/self/status",
            "/proc/cpuinfo",
            "memo.txt",
            "/dev/fd/0",
            "/proc/meminfo",
            "/proc/self/fd",
            "/proc/self/fd/3",
            "/proc/self/root/etc/mem",
            "/proc/self/cwd/x",
            "/proc/self/task",
        ] {
            assert!(!forbidden_path(p.as_bytes(), 1000), "{p}");
        }
    }

    fn cmsg(level: i32, kind: i32, fds: &[i32]) -> Vec<u8> {
        let len = 16 + 4 * fds.len();
        let mut v = (len as u64).to_le_bytes().to_vec();
        v.extend(level.to_le_bytes());
        v.extend(kind.to_le_bytes());
        for fd in fds {
            v.extend(fd.to_le_bytes());
        }
        v.resize(len.div_ceil(8) * 8, 0);
        v
    }

    #[test]
    fn issue_16_dot_dot_does_not_spell_its_way_past_the_path_net() {
        assert!(forbidden_path(b"/proc/self/../self/fd/1000", 1000));
        assert!(forbidden_path(b"/proc/./self/x/../mem", 1000));
        assert!(forbidden_path(b"/dev/../dev/fd/1000", 1000));
        assert!(!forbidden_path(b"/proc/self/../self/fd/3", 1000));
        assert!(!forbidden_path(b"/tmp/../etc/passwd", 1000));
        for p in [
            "19750",
            "fd/3",
            "/mnt/p/self/mem",
            "self/map_files/1-2",
            "./pagemap",
            "syscall/",
        ] {
            assert!(worth_resolving(p.as_bytes()), "{p}");
        }
        for p in [
            "src/main.c",
            "/proc/self/stat",
            "memo",
            "v2",
            "/usr/lib/x86_64-linux-gnu",
            "",
        ] {
            assert!(!worth_resolving(p.as_bytes()), "{p}");
        }
        assert_eq!(lexical("/a/b/../c/./d/"), "/a/c/d/");
        assert_eq!(lexical("/../.."), "/");
        assert_eq!(lexical("rel/../x"), "rel/../x");
    }

    #[test]
    fn scm_rights_may_not_pass_a_vmms_fd() {
        let (sol, rights, creds) = (libc::SOL_SOCKET, libc::SCM_RIGHTS, libc::SCM_CREDENTIALS);
        assert_eq!(vmm_fds_in_control(&cmsg(sol, rights, &[0, 5, 999]), 1000), Ok(()));
        assert_eq!(
            vmm_fds_in_control(&cmsg(sol, rights, &[3, 1000]), 1000),
            Err(EBADF)
        );
        assert_eq!(vmm_fds_in_control(&cmsg(sol, rights, &[-1]), 1000), Err(EBADF));
        // Behind another message (credentials: three u32s, not fds, padded to 8).
        let mut two = cmsg(sol, creds, &[1000, 1000, 1000]);
        two.extend(cmsg(sol, rights, &[1, 19744]));
        assert_eq!(vmm_fds_in_control(&two, 1000), Err(EBADF));
        let mut ok = cmsg(sol, creds, &[1000, 1000, 1000]);
        ok.extend(cmsg(sol, rights, &[1, 2]));
        assert_eq!(vmm_fds_in_control(&ok, 1000), Ok(()));
        // Another level's type 1 is not SCM_RIGHTS; a header that overruns stops the walk (the
        // kernel refuses such a message with EINVAL and passes nothing).
        assert_eq!(
            vmm_fds_in_control(&cmsg(libc::IPPROTO_IP, rights, &[1000]), 1000),
            Ok(())
        );
        let mut bad = cmsg(sol, rights, &[1000]);
        bad[0] = 200;
        assert_eq!(vmm_fds_in_control(&bad, 1000), Ok(()));
    }
}
