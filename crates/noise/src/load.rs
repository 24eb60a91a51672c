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
    stderr_path: std::path::PathBuf,
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
        let stderr_path = std::env::temp_dir().join(format!("multios-noise-load-{}.err", std::process::id()));
        let spawn_err = |source| LoadError::Spawn {
            command: spec.command.clone(),
            source,
        };
        let err_file = std::fs::File::create(&stderr_path).map_err(spawn_err)?;
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
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
            stderr_path,
            stopped: false,
            cpuset,
        };
        let until = Instant::now() + settle;
        while Instant::now() < until {
            if let Ok(Some(status)) = load.child.try_wait() {
                let text = std::fs::read_to_string(&load.stderr_path).unwrap_or_default();
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
        let _ = std::fs::remove_file(&self.stderr_path);
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.kill();
    }
}
