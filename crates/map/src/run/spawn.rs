//! Where the program starts and where the runner waits. The program starts on the CPUs its first
//! thread is given, without a helper process: the calling thread takes those CPUs for the moment of
//! the spawn (a new process inherits its creator's affinity), then gets its own back. std spawns
//! with posix_spawn (a vfork-like clone: no copy of this process's page tables) when no code has to
//! run between fork and exec, so the program starts exactly as a plain `Command::spawn` starts it.
//! The previous start went through `/bin/sh` (it waited for a line on a pipe, then exec'd the
//! program): a fork of this process, an exec of the shell and its start-up before the program's
//! own. The runner waits for events on the CPUs the placement pins nothing to, when there are any
//! ([`Away`]).

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

/// The CPUs a placement leaves to the runner: those this process may use (`allowed`) that no rule
/// pins a thread to. None when the pins take every allowed CPU (or none is pinned).
pub fn off_program(rules: &[super::Rule], allowed: &CpuSet) -> Option<CpuSet> {
    let pinned: Vec<usize> = rules
        .iter()
        .filter_map(|r| match r.cpus[..] {
            [cpu] => Some(cpu as usize),
            _ => None,
        })
        .collect();
    if pinned.is_empty() {
        return None;
    }
    let off: CpuSet = allowed
        .0
        .iter()
        .copied()
        .filter(|c| !pinned.contains(c))
        .collect();
    (!off.is_empty()).then_some(off)
}

/// The calling thread kept on other CPUs while it lives (its own again when dropped): the runner
/// then wakes for its events beside the program rather than in its place.
pub struct Away(Option<libc::cpu_set_t>);

impl Away {
    pub fn on(cpus: Option<&CpuSet>) -> Away {
        let Some(set) = cpus else {
            return Away(None);
        };
        match cpus::current_mask() {
            Ok(mine) if cpus::pin_current_thread(set).is_ok() => Away(Some(mine)),
            _ => Away(None),
        }
    }
}

impl Drop for Away {
    fn drop(&mut self) {
        if let Some(mine) = &self.0 {
            let _ = cpus::pin_thread_to_mask(0, mine);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_12_the_runner_stays_off_the_cpus_the_placement_pins() {
        use super::super::Rule;
        let all: CpuSet = [0, 1, 2].into_iter().collect();
        let free = Rule {
            comm: "sh".into(),
            ordinal: 0,
            cpus: vec![0, 1, 2],
        };
        assert_eq!(
            off_program(std::slice::from_ref(&free), &all),
            None,
            "nothing pinned"
        );
        let on0 = [free.clone(), Rule::pin("a", 0, 0), Rule::pin("b", 0, 0)];
        assert_eq!(off_program(&on0, &all), Some([1, 2].into_iter().collect()));
        let every = [Rule::pin("a", 0, 0), Rule::pin("b", 0, 1), Rule::pin("c", 0, 2)];
        assert_eq!(off_program(&every, &all), None, "no CPU left over");
    }

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
