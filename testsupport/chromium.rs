//! Debian's headless Chromium for the tests that load a page (the report, the trace viewer):
//! fails loudly, naming the fix, where it is missing.

use std::process::Command;

/// Runs `chromium --headless … ARGS URL`; returns (stdout, stderr).
pub fn chromium(args: &[&str], url: &str) -> (String, String) {
    let o = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
        ])
        .args(args)
        .arg(url)
        .output()
        .unwrap_or_else(|e| {
            panic!("chromium: {e} — install it (scripts/deps.sh installs Debian's chromium)")
        });
    assert!(
        o.status.success(),
        "chromium: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}
