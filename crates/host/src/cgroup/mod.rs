//! cpuset cgroups. [`Cpuset`]: one created for the noise tools' in-situ load and removed
//! afterwards (also on error and Ctrl-C, through `Drop`); cgroup v2 when its hierarchy offers the
//! cpuset controller, else the v1 cpuset hierarchy (hybrid systems such as this one mount cpuset
//! as v1). [`reserve`]: the LWK's reserved partition of CPUs.

pub mod reserve;

use std::fs;
use std::io::Write as _;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// An error while creating or removing the cpuset cgroup.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    #[error("no cpuset cgroup hierarchy is mounted (neither cgroup v2 with the cpuset controller nor a v1 cpuset mount in /proc/mounts); use --isolate affinity")]
    NoCpuset,
    #[error("{what} {path}: {source} (creating cgroups needs root)")]
    Io {
        what: &'static str,
        path: String,
        source: std::io::Error,
    },
}

/// Which cgroup hierarchy holds the cpuset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Version {
    V1,
    V2,
}

/// A live cpuset cgroup; removed on drop.
#[derive(Debug)]
pub struct Cpuset {
    pub dir: PathBuf,
    pub version: Version,
    procs: fs::File,
}

pub(crate) fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> CgroupError {
    let path = path.display().to_string();
    move |source| CgroupError::Io { what, path, source }
}

pub(crate) fn write_file(path: &Path, value: &str) -> Result<(), CgroupError> {
    let mut f = fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(io("cannot open", path))?;
    f.write_all(value.as_bytes()).map_err(io("cannot write", path))
}

/// The cpuset hierarchy: (mount point, version).
fn find_hierarchy() -> Result<(PathBuf, Version), CgroupError> {
    let mounts = fs::read_to_string("/proc/mounts").map_err(io("cannot read", Path::new("/proc/mounts")))?;
    let mut v1 = None;
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 4 {
            continue;
        }
        let dir = PathBuf::from(f[1]);
        if f[2] == "cgroup2" {
            let ctl = fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
            if ctl.split_whitespace().any(|c| c == "cpuset") {
                return Ok((dir, Version::V2));
            }
        } else if f[2] == "cgroup" && f[3].split(',').any(|o| o == "cpuset") {
            v1 = Some(dir);
        }
    }
    v1.map(|d| (d, Version::V1)).ok_or(CgroupError::NoCpuset)
}

/// Removes the `multios-noise-<pid>-<n>` cgroups of processes that no longer run (a SIGKILLed tool cannot
/// remove its own), killing what is still inside them.
fn remove_stale(root: &Path) {
    let Ok(dir) = fs::read_dir(root) else {
        return;
    };
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("multios-noise-"))
            .and_then(|n| n.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() as i32 && !crate::sys::pid_alive(pid) {
            let stale = Cpuset {
                dir: entry.path(),
                version: Version::V1,
                procs: match fs::File::open(entry.path().join("cgroup.procs")) {
                    Ok(f) => f,
                    Err(_) => continue,
                },
            };
            // dropping `stale` removes it, warning if it cannot
            drop(stale);
        }
    }
}

impl Cpuset {
    /// Creates `multios-noise-<pid>-<n>` restricted to `cpus` (e.g. "1").
    pub fn create(cpus: &str) -> Result<Cpuset, CgroupError> {
        let (root, version) = find_hierarchy()?;
        if version == Version::V2 {
            let sub = root.join("cgroup.subtree_control");
            let cur = fs::read_to_string(&sub).map_err(io("cannot read", &sub))?;
            if !cur.split_whitespace().any(|c| c == "cpuset") {
                write_file(&sub, "+cpuset")?;
            }
        }
        remove_stale(&root);
        // unique per creation: two loads of one process never share (or remove) a cgroup
        static SERIAL: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = root.join(format!("multios-noise-{}-{n}", std::process::id()));
        fs::create_dir(&dir).map_err(io("cannot create", &dir))?;
        // if the set-up fails, the directory is removed again below
        let procs_path = dir.join("cgroup.procs");
        let setup = || -> Result<fs::File, CgroupError> {
            write_file(&dir.join("cpuset.cpus"), cpus)?;
            if version == Version::V1 {
                let mems_path = root.join("cpuset.mems");
                let mems = fs::read_to_string(&mems_path).map_err(io("cannot read", &mems_path))?;
                write_file(&dir.join("cpuset.mems"), mems.trim())?;
            }
            fs::OpenOptions::new()
                .write(true)
                .open(&procs_path)
                .map_err(io("cannot open", &procs_path))
        };
        match setup() {
            Ok(procs) => Ok(Cpuset { dir, version, procs }),
            Err(e) => {
                let _ = fs::remove_dir(&dir);
                Err(e)
            }
        }
    }

    /// An open `cgroup.procs` of the cgroup: writing "0" to it moves the writer inside.
    pub fn procs_fd(&self) -> i32 {
        self.procs.as_raw_fd()
    }

    /// The cgroup's effective CPUs as the kernel reports them.
    pub fn effective_cpus(&self) -> String {
        fs::read_to_string(self.dir.join("cpuset.effective_cpus"))
            .unwrap_or_default()
            .trim()
            .to_string()
    }

    /// Kills what is left inside and removes the directory (retrying while tasks exit).
    pub fn remove(&self) -> Result<(), CgroupError> {
        let mut last = None;
        for _ in 0..100 {
            if !self.dir.exists() {
                return Ok(());
            }
            let pids = fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
            for pid in pids.split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
                let _ = crate::sys::kill_pid(pid, libc::SIGKILL);
            }
            match fs::remove_dir(&self.dir) {
                Ok(()) => return Ok(()),
                Err(e) => last = Some(e),
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Err(CgroupError::Io {
            what: "cannot remove",
            path: self.dir.display().to_string(),
            source: last.unwrap_or_else(|| std::io::Error::other("busy")),
        })
    }
}

impl Drop for Cpuset {
    fn drop(&mut self) {
        if let Err(e) = self.remove() {
            eprintln!("warning: {e}");
        }
    }
}
