//! issue 18: both Chrome traces multios writes (`profile --trace`, `aam trace`) load in a trace
//! viewer installed from a package registry that runs offline: speedscope (npm, `speedscope`),
//! opened in Debian's headless Chromium with the trace handed to it the way its own command-line
//! launcher does (a script calling `speedscope.loadFileFromBase64`). The test reads back what the
//! viewer built: one profile per thread that has complete events, named after its `thread_name`,
//! whose total weight equals the sum of that thread's event durations (speedscope drops events
//! that do not nest, so a wrong trace shows as a smaller weight). scripts/deps.sh installs
//! speedscope into /usr/local/lib/multios-js (or set MULTIOS_SPEEDSCOPE to its package directory);
//! the test fails loudly without it.

#[path = "../../../testsupport/chromium.rs"]
mod browser;
#[path = "../../../testsupport/scratch.rs"]
mod scratch;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_multios");

fn speedscope() -> PathBuf {
    let dir = std::env::var_os("MULTIOS_SPEEDSCOPE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/local/lib/multios-js/node_modules/speedscope"));
    let index = dir.join("dist/release/index.html");
    assert!(
        index.is_file(),
        "{} is missing: scripts/deps.sh installs speedscope from npm (npm install --prefix \
         /usr/local/lib/multios-js speedscope), or set MULTIOS_SPEEDSCOPE to its package directory",
        index.display()
    );
    index
}

fn multios(args: &[&str]) {
    let o = Command::new(BIN).args(args).output().expect("run multios");
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Per (pid, tid): the thread's name and the summed duration of its top-level complete events (µs).
fn expected(trace: &serde_json::Value) -> BTreeMap<(u64, u64), (String, f64)> {
    let ev = trace["traceEvents"].as_array().expect("traceEvents");
    let id = |e: &serde_json::Value| (e["pid"].as_u64().expect("pid"), e["tid"].as_u64().expect("tid"));
    let mut spans: BTreeMap<(u64, u64), Vec<(f64, f64)>> = BTreeMap::new();
    for e in ev.iter().filter(|e| e["ph"] == "X") {
        let (ts, dur) = (e["ts"].as_f64().expect("ts"), e["dur"].as_f64().expect("dur"));
        spans.entry(id(e)).or_default().push((ts, ts + dur));
    }
    let names: BTreeMap<(u64, u64), String> = ev
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| (id(e), e["args"]["name"].as_str().expect("name").to_string()))
        .collect();
    spans
        .into_iter()
        .map(|(k, mut v)| {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (mut sum, mut end) = (0.0, f64::NEG_INFINITY);
            for (s, e) in v {
                if s >= end {
                    sum += e - s;
                    end = e;
                }
            }
            (k, (names.get(&k).cloned().unwrap_or_default(), sum))
        })
        .collect()
}

/// speedscope's duration text (`174.88ms`, `826.65µs`, `1.20s`, `12.00ns`) in µs, with the
/// half-unit of its last digit.
fn weight_us(text: &str) -> (f64, f64) {
    for (unit, us) in [("ms", 1e3), ("µs", 1.0), ("ns", 1e-3), ("s", 1e6)] {
        if let Some(n) = text.strip_suffix(unit) {
            let v: f64 = n.parse().unwrap_or_else(|e| panic!("weight {text}: {e}"));
            return (v * us, 0.005 * us);
        }
    }
    panic!("weight {text}: no unit")
}

/// Loads `trace` in speedscope; returns the page title and each profile's (title, weight text).
fn load(trace: &Path, dir: &Path) -> (String, Vec<(String, String)>) {
    let text = std::fs::read_to_string(trace).expect("trace");
    let name = trace.file_name().and_then(|n| n.to_str()).expect("name");
    let script = dir.join(format!("{name}.load.js"));
    let literal = serde_json::to_string(&text).expect("literal");
    std::fs::write(
        &script,
        format!(
            "speedscope.loadFileFromBase64({:?}, btoa(unescape(encodeURIComponent({literal}))))",
            name
        ),
    )
    .expect("script");
    let url = format!(
        "file://{}#localProfilePath={}",
        speedscope().display(),
        script.display()
    );
    let (dom, _) = browser::chromium(
        &[
            "--allow-file-access-from-files",
            "--virtual-time-budget=10000",
            "--dump-dom",
        ],
        &url,
    );
    let title = dom
        .split("<title>")
        .nth(1)
        .and_then(|t| t.split('<').next())
        .unwrap_or_default()
        .to_string();
    let rows = dom
        .split("<tr title=\"")
        .skip(1)
        .map(|chunk| {
            let t = chunk.split('"').next().unwrap_or_default().to_string();
            let row = chunk.split("</tr>").next().unwrap_or_default();
            let w = row
                .rsplit("</td>")
                .nth(1)
                .and_then(|c| c.rsplit('>').next())
                .unwrap_or_default()
                .to_string();
            (t, w)
        })
        .collect();
    (title, rows)
}

fn check(trace: &Path, dir: &Path) {
    let want = expected(&serde_json::from_str(&std::fs::read_to_string(trace).expect("read")).expect("JSON"));
    let (title, rows) = load(trace, dir);
    let name = trace.file_name().and_then(|n| n.to_str()).expect("name");
    assert_eq!(
        title,
        format!("{name} - speedscope"),
        "speedscope did not load {name}"
    );
    assert_eq!(
        rows.len(),
        want.len(),
        "one profile per thread with events: {rows:?}"
    );
    for ((pid, tid), (thread, sum)) in &want {
        let row = rows
            .iter()
            .find(|(t, _)| {
                t.contains(thread.as_str())
                    && t.contains(&format!("tid {tid})"))
                    && t.contains(&format!("pid {pid}"))
            })
            .unwrap_or_else(|| panic!("no profile for pid {pid} tid {tid} ({thread}) in {rows:?}"));
        let (shown, half) = weight_us(&row.1);
        assert!(
            (shown - sum).abs() <= half + 1e-6 * sum,
            "{}: speedscope shows {} for events adding up to {sum} µs",
            row.0,
            row.1
        );
    }
}

#[test]
fn issue_18_profile_and_aam_traces_load_in_speedscope() {
    let dir = scratch::Scratch::new("multios-test", "trace-viewer");
    let (prof, trace) = (dir.join("p.json"), dir.join("syscalls.json"));
    multios(&[
        "profile",
        "-o",
        prof.to_str().expect("path"),
        "--trace",
        trace.to_str().expect("path"),
        "--",
        "sh",
        "-c",
        "ls / >/dev/null; cat /etc/hostname >/dev/null",
    ]);
    check(&trace, dir.path());
    let aam = dir.join("aam.json");
    multios(&["aam", "trace", "-o", aam.to_str().expect("path"), "--calls", "50"]);
    check(&aam, dir.path());
}
