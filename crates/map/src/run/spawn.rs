//! Starting the program on the CPUs its first thread is given, without a helper process: the
//! calling thread takes those CPUs for the moment of the spawn (a new process inherits its
//! creator's affinity), then gets its own back. std spawns with posix_spawn (a vfork-like clone: no
//! copy of this process's page tables) when no code has to run between fork and exec, so the program
//! starts exactly as a plain `Command::spawn` starts it. The previous start went through `/bin/sh`
//! (it waited for a line on a pipe, then exec'd the program): a fork of this process, an exec of
//! the shell and its start-up before the program's own.

use multios_host::cpus::{self, CpuSet};
use std::process::{Child, Command};

/// Spawns `cmd` with affinity `on` (None: this thread's own, unchanged).
pub fn spawn_on(cmd: &mut Command, on: Option<&CpuSet>) -> std::io::Result<Child> {
    let Some(set) = on else {
        return cmd.spawn();
    };
    let mine = cpus::current_mask()?;
    cpus::pin_current_thread(set)?;
    let child = cmd.spawn();
    // this thread's own CPUs again, whatever the spawn did
    let restored = cpus::pin_thread_to_mask(0, &mine);
    let child = child?;
    restored?;
    Ok(child)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_12_the_program_starts_on_its_cpus_and_the_caller_keeps_its_own() {
        let allowed = CpuSet::allowed();
        let first: CpuSet = [allowed.first().unwrap_or(0)].into_iter().collect();
        let mut cmd = Command::new("grep");
        cmd.args(["Cpus_allowed_list", "/proc/self/status"])
            .stdout(std::process::Stdio::piped());
        let child = spawn_on(&mut cmd, Some(&first)).expect("grep runs");
        let out = child.wait_with_output().expect("grep ends");
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            text.split_whitespace().last(),
            Some(first.to_string().as_str()),
            "{text}"
        );
        assert_eq!(CpuSet::allowed(), allowed, "the caller got its CPUs back");
    }
}
