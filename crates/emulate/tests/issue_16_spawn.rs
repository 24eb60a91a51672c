//! Issue #16 item 5: children made with CLONE_VM but without CLONE_THREAD (vfork, posix_spawn's
//! clone(CLONE_VM|CLONE_VFORK), system()) share their parent's memory, hence its mailbox and
//! delegate thread. Their dup2/close calls must act on their own descriptor table: under every
//! mechanism the output and the exit status are those of the native run. Every run is bounded by
//! timeout(1), so a hang fails instead of blocking.

mod common;
use multios_emulate::{Delegation, Exit, Mechanism};
use std::path::Path;
use std::process::Command;

/// posix_spawn with adddup2 of a pipe onto stdout: the parent must read the child's output.
const SPAWN_C: &str = r#"
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
extern char **environ;
int main(void) {
    int p[2];
    if (pipe(p)) return 2;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    posix_spawn_file_actions_addclose(&fa, p[0]);
    posix_spawn_file_actions_addclose(&fa, p[1]);
    char *argv[] = {"/bin/echo", "hello", NULL};
    pid_t pid;
    if (posix_spawn(&pid, "/bin/echo", &fa, NULL, argv, environ)) return 3;
    close(p[1]);
    char buf[64] = {0};
    ssize_t n = read(p[0], buf, sizeof buf - 1);
    int st;
    waitpid(pid, &st, 0);
    printf("spawn read %zd [%s] status %d\n", n, buf, WEXITSTATUS(st));
    return strcmp(buf, "hello\n") ? 1 : 0;
}
"#;

/// vfork + dup2 + execve, then system() (posix_spawn of sh inside glibc) with an exit status.
const VFORK_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
int main(void) {
    int p[2];
    if (pipe(p)) return 2;
    pid_t pid = vfork();
    if (pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        char *argv[] = {"/bin/echo", "vforked", NULL};
        execv("/bin/echo", argv);
        _exit(127);
    }
    close(p[1]);
    char buf[64] = {0};
    ssize_t n = read(p[0], buf, sizeof buf - 1);
    int st;
    waitpid(pid, &st, 0);
    printf("vfork read %zd [%s] status %d\n", n, buf, WEXITSTATUS(st));
    fflush(stdout);
    int r = system("echo from-system; exit 3");
    printf("system %d\n", WEXITSTATUS(r));
    return strcmp(buf, "vforked\n") ? 1 : 5;
}
"#;

const PYTHON: &str =
    "import subprocess; r=subprocess.run(['/bin/echo','x'],capture_output=True); print('captured',repr(r.stdout))";

fn build(dir: &Path, name: &str, src: &str) -> String {
    let c = dir.join(format!("{name}.c"));
    let exe = dir.join(name);
    std::fs::write(&c, src).unwrap_or_else(|e| panic!("writing {}: {e}", c.display()));
    let st = Command::new("gcc")
        .args(["-O2", "-o"])
        .arg(&exe)
        .arg(&c)
        .status()
        .unwrap_or_else(|e| panic!("gcc (required by this test): {e}"));
    assert!(st.success(), "gcc failed on {name}.c");
    exe.to_str().expect("UTF-8 temp dir").to_string()
}

/// `sh -c 'CMD > out 2>&1'` under timeout(1), in `dir`; returns the output and the exit.
fn argv(dir: &Path, cmd: &str) -> Vec<String> {
    let out = dir.join("out");
    vec![
        "timeout".into(),
        "-s".into(),
        "KILL".into(),
        "60".into(),
        "sh".into(),
        "-c".into(),
        format!("{cmd} > {} 2>&1", out.display()),
    ]
}

fn native(dir: &Path, cmd: &str) -> (Vec<u8>, Exit) {
    let a = argv(dir, cmd);
    let st = Command::new(&a[0])
        .args(&a[1..])
        .status()
        .unwrap_or_else(|e| panic!("native {cmd}: {e}"));
    let exit = match st.code() {
        Some(c) => Exit::Code(c),
        None => Exit::Signal(9),
    };
    (std::fs::read(dir.join("out")).unwrap_or_default(), exit)
}

fn emulated(dir: &Path, cmd: &str, m: Mechanism, d: Delegation) -> (Vec<u8>, Exit) {
    let a = argv(dir, cmd);
    let refs: Vec<&str> = a.iter().map(String::as_str).collect();
    let r = common::run(m, d, 20e-6, &refs);
    (std::fs::read(dir.join("out")).unwrap_or_default(), r.exit)
}

fn python3() -> bool {
    Command::new("python3")
        .arg("-c")
        .arg("pass")
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn issue_16_vfork_and_posix_spawn_children_keep_their_own_descriptors() {
    let base = common::tmpdir("issue16-spawn");
    let spawn = build(&base, "spawn", SPAWN_C);
    let vfork = build(&base, "vfork", VFORK_C);
    let mut cmds = vec![spawn, vfork];
    assert!(python3(), "python3 is required by this test");
    cmds.push(format!("python3 -c \"{PYTHON}\""));
    let dir = base.join("run");
    std::fs::create_dir_all(&dir).ok();
    let mut failures = Vec::new();
    for cmd in &cmds {
        let want = native(&dir, cmd);
        assert!(
            matches!(want.1, Exit::Code(0) | Exit::Code(5)),
            "native {cmd}: {:?} {}",
            want.1,
            String::from_utf8_lossy(&want.0)
        );
        for m in [Mechanism::Shm, Mechanism::Migrate, Mechanism::Proxy] {
            for policy in ["all", "mckernel"] {
                let d = if policy == "all" {
                    Delegation::all()
                } else {
                    common::named(policy)
                };
                let got = emulated(&dir, cmd, m, d);
                if got != want {
                    failures.push(format!(
                        "{cmd} under {} policy {policy}: {:?} {:?}, native {:?} {:?}",
                        m.name(),
                        got.1,
                        String::from_utf8_lossy(&got.0),
                        want.1,
                        String::from_utf8_lossy(&want.0)
                    ));
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&base);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
