//! Issue #16: a Ctrl-C typed at the terminal reaches an emulated program once. The terminal sends
//! SIGINT to its whole foreground process group, the program included; multios also forwarded the
//! one it received, so a Python program handling SIGINT counted two (shm: 2 of 2 runs). Signals
//! sent by a process are still forwarded (`issue_16_emulate_cli.rs`). Runs the program on a
//! pseudo-terminal through python3's pty module (a test dependency: apt-get install python3).

use std::process::Command;

const PROGRAM: &str = r#"
import signal, time
n = 0
def h(s, f):
    global n
    n += 1
signal.signal(signal.SIGINT, h)
print("ready", flush=True)
t = time.time()
while time.time() - t < 1.5:
    time.sleep(0.05)
print("SIGINT handled", n, "times")
"#;

/// Runs argv on a new pty as its controlling terminal, types ^C once "ready" is printed, returns
/// the output.
const DRIVER: &str = r#"
import os, pty, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
out, sent, deadline = b"", False, time.time() + 60
while time.time() < deadline:
    try:
        b = os.read(fd, 4096)
    except OSError:
        break
    if not b:
        break
    out += b
    if not sent and b"ready" in out:
        time.sleep(0.2)
        os.write(fd, b"\x03")
        sent = True
os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace"))
"#;

#[test]
fn issue_16_a_terminal_ctrl_c_reaches_the_emulated_program_once() {
    let dir = std::env::temp_dir().join(format!("multios-issue16-ctrlc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let prog = dir.join("ki.py");
    std::fs::write(&prog, PROGRAM).expect("writing the program");
    for mechanism in ["shm", "migrate", "proxy"] {
        let out = Command::new("python3")
            .args([
                "-c",
                DRIVER,
                env!("CARGO_BIN_EXE_multios"),
                "emulate",
                "--policy",
                "all",
            ])
            .args(["--fc", "0ns", "--allow-below-floor", "--mechanism", mechanism])
            .args(["--report", "/dev/null", "--", "python3"])
            .arg(&prog)
            .output()
            .unwrap_or_else(|e| panic!("running python3 (apt-get install python3): {e}"));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("SIGINT handled 1 times"),
            "{mechanism}: the program must see one SIGINT\n{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
