//! Reading small procfs files (another process's maps; `fdinfo` and `mountinfo` on kernels
//! without statmount) on a thread with a file table of its own, so that the descriptor the read
//! needs never exists in the table the guest's descriptors live in.
//!
//! Before, the VMM opened such a file at the lowest free number — in the guest's range — and moved
//! it above the floor under `sys::low_fds`. The lock keeps the guest's own calls off that number,
//! but not io_uring work the guest queued: a linked READ runs as task work inside whichever VMM
//! thread submitted the guest's ring (this one, on its way back from `openat`), looks the number
//! up then, and read the VMM's procfs text (a sibling VMM's memory layout) — and, sharing the file
//! position, cut the start off what the VMM read. Here the descriptor is made, read and closed in
//! the reader thread's private table, which no guest call and no io_uring request can name.
//!
//! One reader per process, started on first use; a forked VMM (whose reader thread did not come
//! along) starts its own. A request costs two thread wake-ups (≈ 50 µs in this VM); the callers
//! are rare (a guest's open of a procfs file on a kernel without statmount, a cross-process memory
//! call naming a VMM built from another binary).

use std::io;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::mpsc;

struct Request {
    path: String,
    reply: mpsc::SyncSender<io::Result<Vec<u8>>>,
}

struct Reader {
    pid: u32,
    dir: i32,
    tx: mpsc::Sender<Request>,
}

/// This process's reader (leaked: one per process that uses it, a forked child's replacing its
/// parent's copy, whose thread it does not have).
static READER: AtomicPtr<Reader> = AtomicPtr::new(std::ptr::null_mut());

/// The whole content of the small file `path` under directory fd `dir` (the VMM's procfs,
/// kept above the floor), read on the private-table thread.
pub fn read(dir: i32, path: &str) -> io::Result<Vec<u8>> {
    let reader = reader(dir)?;
    let (reply, answer) = mpsc::sync_channel(1);
    let gone = || {
        io::Error::new(
            io::ErrorKind::BrokenPipe,
            "the VMM's procfs reader thread is gone",
        )
    };
    reader
        .tx
        .send(Request {
            path: path.to_string(),
            reply,
        })
        .map_err(|_| gone())?;
    answer.recv().map_err(|_| gone())?
}

fn reader(dir: i32) -> io::Result<&'static Reader> {
    let pid = std::process::id();
    let cur = READER.load(Ordering::Acquire);
    // SAFETY: a non-null READER points at a leaked Reader, never freed.
    if let Some(r) = unsafe { cur.as_ref() } {
        if r.pid == pid && r.dir == dir {
            return Ok(r);
        }
    }
    let fresh = Box::into_raw(Box::new(start(dir)?));
    match READER.compare_exchange(cur, fresh, Ordering::AcqRel, Ordering::Acquire) {
        // SAFETY: `fresh` was just leaked from a Box and is never freed.
        Ok(_) => Ok(unsafe { &*fresh }),
        // Another thread installed one first: use it (ours stays, unused, with its idle thread).
        // SAFETY: as above; the winner is a leaked Reader too.
        Err(won) => Ok(unsafe { &*won }),
    }
}

fn start(dir: i32) -> io::Result<Reader> {
    let (tx, rx) = mpsc::channel::<Request>();
    let (ready_tx, ready) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("multios-procfs".into())
        .spawn(move || {
            let setup = crate::sys::private_table_keeping(dir);
            let ok = setup.is_ok();
            let _ = ready_tx.send(setup);
            if !ok {
                return;
            }
            for req in rx {
                let _ = req.reply.send(read_here(dir, &req.path));
            }
        })?;
    ready
        .recv()
        .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the procfs reader thread died"))??;
    Ok(Reader {
        pid: std::process::id(),
        dir,
        tx,
    })
}

/// The read itself, in the private table.
fn read_here(dir: i32, path: &str) -> io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::fd::FromRawFd;
    let fd = crate::sys::open_at(dir, path, libc::O_RDONLY)?;
    // SAFETY: `fd` was just opened in this thread's private table and is owned by nobody else:
    // the File takes it over and closes it.
    let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
    let mut out = Vec::new();
    f.read_to_end(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_procfs_file_without_a_descriptor_in_the_shared_table() {
        let dir =
            crate::sys::open_at(libc::AT_FDCWD, "/proc", libc::O_RDONLY | libc::O_DIRECTORY).expect("/proc");
        let before = std::fs::read_dir("/proc/self/fd").expect("fd dir").count();
        let status = read(dir, "self/status").expect("self/status");
        assert!(String::from_utf8_lossy(&status).contains("Tgid:"));
        // The reader thread's file table is its own: the shared one gained nothing, and its own
        // holds `dir` only.
        let after = std::fs::read_dir("/proc/self/fd").expect("fd dir").count();
        assert!(after <= before + 1, "{before} → {after}");
        assert!(read(dir, "no-such-file").is_err());
        crate::sys::close(dir);
    }
}
