//! The in-situ load: a shell command started in its own process group before the measurement and
//! killed (the whole group) after it, placed by an isolation option.

use crate::cgroup::{CgroupError, Cpuset};
use crate::{cpus, sys};
use serde::Serialize;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Where the load may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// Wherever the scheduler puts it.
    None,
    /// Pinned with sched_setaffinity to the load CPUs.
    Affinity,
    /// Inside a cpuset cgroup holding the load CPUs, created and removed by the tool.
    Cpuset,
}

impl std::str::FromStr for Isolation {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(Isolation::None),
            "affinity" => Ok(Isolation::Affinity),
            "cpuset" => Ok(Isolation::Cpuset),
            _ => Err(format!("unknown isolation '{s}': use none, affinity or cpuset")),
        }
    }
}

/// What to run and where.
#[derive(Debug, Clone, Serialize)]
pub struct LoadSpec {
    pub command: String,
    pub isolation: Isolation,
    /// The load's CPUs for `affinity` and `cpuset` (ignored for `none`).
    pub cpus: Vec<usize>,
}

/// An error starting or stopping the load.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot start the load 'sh -c {command:?}': {source}")]
    Spawn { command: String, source: std::io::Error },
    #[error("the load '{command}' exited ({status}) before the measurement started{stderr}")]
    Exited {
        command: String,
        status: String,
        stderr: String,
    },
    #[error("the load's CPU list is empty")]
    NoCpus,
    #[error(transparent)]
    Cgroup(#[from] CgroupError),
    #[error(transparent)]
    Cpu(#[from] cpus::CpuError),
}

/// A running load; stopped (process group killed, cgroup removed) on drop.
#[derive(Debug)]
pub struct Load {
    child: Child,
    pub spec: LoadSpec,
    /// The load's stderr: a file already unlinked, so nothing is left behind even after SIGKILL.
    stderr: std::fs::File,
    stopped: bool,
    // declared last: dropped after the child is reaped
    cpuset: Option<Cpuset>,
}

impl Load {
    /// Starts the load and waits `settle` for it to get going; fails if it already exited.
    pub fn start(spec: &LoadSpec, settle: Duration) -> Result<Load, LoadError> {
        if spec.isolation != Isolation::None {
            if spec.cpus.is_empty() {
                return Err(LoadError::NoCpus);
            }
            cpus::check_online(&spec.cpus, &cpus::online()?)?;
        }
        let cpuset = match spec.isolation {
            Isolation::Cpuset => Some(Cpuset::create(&cpus::format_list(&spec.cpus))?),
            _ => None,
        };
        let spawn_err = |source| LoadError::Spawn {
            command: spec.command.clone(),
            source,
        };
        remove_stale_stderr_files();
        let stderr = anonymous_file().map_err(spawn_err)?;
        let err_file = stderr.try_clone().map_err(spawn_err)?;
        // The process-group leader is a shell that runs the command in a child shell and, on SIGTERM (the
        // death signal it gets when this process dies, even by SIGKILL), kills the whole group: the death
        // signal itself reaches only the leader, not what the command forks.
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(r#"trap 'kill -KILL 0' TERM; sh -c "$1" & wait $!"#)
            .arg("multios-load")
            .arg(&spec.command)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err_file);
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let pin = (spec.isolation == Isolation::Affinity).then_some(spec.cpus.as_slice());
        sys::pre_exec_place(&mut cmd, pin, cpuset.as_ref().map(Cpuset::procs_fd)).map_err(spawn_err)?;
        let child = cmd.spawn().map_err(spawn_err)?;
        let mut load = Load {
            child,
            spec: spec.clone(),
            stderr,
            stopped: false,
            cpuset,
        };
        let until = Instant::now() + settle;
        while Instant::now() < until {
            if let Ok(Some(status)) = load.child.try_wait() {
                let text = read_all(&load.stderr);
                let text = text.trim();
                let stderr = if text.is_empty() {
                    String::new()
                } else {
                    format!("; its stderr: {text}")
                };
                return Err(LoadError::Exited {
                    command: spec.command.clone(),
                    status: status.to_string(),
                    stderr,
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(load)
    }

    /// The load's process id (= its process group id).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The cpuset's effective CPUs, when there is one.
    pub fn cpuset_cpus(&self) -> Option<String> {
        self.cpuset.as_ref().map(Cpuset::effective_cpus)
    }

    /// Stops the load: SIGTERM to the group, SIGKILL after 500 ms, reap, remove the cgroup.
    pub fn stop(mut self) -> Result<(), LoadError> {
        self.kill();
        if let Some(c) = self.cpuset.take() {
            c.remove()?;
        }
        Ok(())
    }

    fn kill(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        let pgid = self.child.id() as i32;
        let _ = sys::kill_group(pgid, libc::SIGTERM);
        let until = Instant::now() + Duration::from_millis(500);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        // the group may outlive its leader: always finish it off
        let _ = sys::kill_group(pgid, libc::SIGKILL);
        let _ = self.child.wait();
    }
}

/// A temporary file for the load's stderr, unlinked as soon as it is open.
fn anonymous_file() -> std::io::Result<std::fs::File> {
    static SERIAL: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("multios-noise-load-{}-{n}.err", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)?;
    std::fs::remove_file(&path)?;
    Ok(file)
}

/// The first 64 KiB of an (unlinked) file, read from its start whatever its offset.
fn read_all(file: &std::fs::File) -> String {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; 64 << 10];
    let n = file.read_at(&mut buf, 0).unwrap_or(0);
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

/// Removes the stderr files `multios-noise-load-<pid>[-n].err` that earlier versions left in the temporary
/// directory when they were killed, for pids that no longer run.
fn remove_stale_stderr_files() {
    let Ok(dir) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("multios-noise-load-"))
            .and_then(|n| n.strip_suffix(".err"))
            .and_then(|n| n.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        if !sys::pid_alive(pid) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.kill();
    }
}
