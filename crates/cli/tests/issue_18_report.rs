//! issue 18: `multios report` writes one self-contained HTML page that opens in headless Chromium
//! without console errors, whose numbers equal the CLI's JSON, with a screenshot per section
//! (written to target/issue-18-report/ to be looked at). Chromium is required: the test fails
//! loudly without it (scripts/deps.sh installs Debian's `chromium`).

#[path = "../../../testsupport/chromium.rs"]
mod browser;
#[path = "../../../testsupport/scratch.rs"]
mod scratch;

use browser::chromium;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_multios");

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn multios(args: &[&str]) -> String {
    let o = Command::new(BIN).args(args).output().expect("run multios");
    assert!(
        o.status.success(),
        "multios {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("utf-8")
}

/// The attributes of every `<td …>` in the serialised DOM.
fn cells(dom: &str) -> Vec<BTreeMap<String, String>> {
    let mut out = Vec::new();
    for chunk in dom.split("<td").skip(1) {
        let Some(end) = chunk.find('>') else { continue };
        let mut attrs = BTreeMap::new();
        let mut rest = &chunk[..end];
        while let Some(eq) = rest.find("=\"") {
            let name = rest[..eq]
                .trim()
                .rsplit(' ')
                .next()
                .unwrap_or_default()
                .to_string();
            let after = &rest[eq + 2..];
            let close = after.find('"').expect("closing quote");
            attrs.insert(name, after[..close].replace("&amp;", "&").replace("&quot;", "\""));
            rest = &after[close + 1..];
        }
        out.push(attrs);
    }
    out
}

#[test]
fn issue_18_report_opens_in_chromium_and_its_numbers_equal_the_cli_json() {
    let dir = scratch::Scratch::new("multios-test", "report");
    let profile = root().join("examples/bzip2/profile.json");
    let profile = profile.to_str().expect("path");
    // a real validate run as the measured side (small: a second)
    let validate = dir.join("validate.json");
    let v = multios(&[
        "--json",
        "validate",
        "--iters",
        "20000",
        "--phases",
        "2",
        "--repeat",
        "1",
        "--gamma",
        "1,2",
        "--policy",
        "all",
        "--fc",
        "10us",
        "--out",
        dir.join("v").to_str().expect("path"),
    ]);
    std::fs::write(&validate, &v).expect("write");
    let html = dir.join("report.html");
    let data: serde_json::Value = serde_json::from_str(&multios(&[
        "--json",
        "report",
        "-o",
        html.to_str().expect("path"),
        "--profile",
        profile,
        validate.to_str().expect("path"),
    ]))
    .expect("report --json");
    let url = format!("file://{}", html.display());

    // loads, renders, and logs nothing to the console (errors and warnings would show as CONSOLE lines)
    let (dom, log) = chromium(&["--enable-logging=stderr", "--v=0", "--dump-dom"], &url);
    assert!(
        dom.contains("data-rendered=\"ok\""),
        "the page's script did not finish"
    );
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    for id in ["profile", "cdf", "projections", "measured"] {
        assert!(dom.contains(&format!("<section id=\"{id}\"")), "section {id}");
    }

    // every projection cell equals `multios model refined --json` and the report's JSON
    let tds = cells(&dom);
    let proj: Vec<_> = tds.iter().filter(|c| c.contains_key("data-policy")).collect();
    let want = data["projections"].as_array().expect("projections");
    assert_eq!(proj.len(), want.len());
    assert_eq!(proj.len(), 6 * 5 * 4);
    for c in &proj {
        let (pol, fc, g) = (&c["data-policy"], &c["data-fc"], &c["data-gamma"]);
        let v: f64 = c["data-v"].parse().expect("number");
        let cli: serde_json::Value = serde_json::from_str(&multios(&[
            "--json",
            "model",
            "refined",
            "--profile",
            profile,
            "--gamma",
            g,
            "--fc",
            fc,
            "--policy",
            pol,
        ]))
        .expect("refined --json");
        assert_eq!(
            v,
            cli["speedup"].as_f64().expect("speedup"),
            "{pol} γ={g} f_c={fc}"
        );
        assert!(c["title"].contains(&format!("--policy {pol}")));
    }
    // the profile table: every row's numbers equal the report's JSON (which is the profile's)
    let rows = data["profile"]["rows"].as_array().expect("rows");
    let counts: Vec<f64> = dom
        .split("<tr data-syscall=")
        .skip(1)
        .map(|r| cells(r)[1]["data-v"].parse().expect("n(s)"))
        .collect();
    assert_eq!(counts.len(), rows.len());
    for (c, r) in counts.iter().zip(rows) {
        assert_eq!(*c, r["count"].as_f64().expect("count"));
    }
    // the measured table: the validate points
    let points = serde_json::from_str::<serde_json::Value>(&v).expect("validate json")["points"].clone();
    let measured: Vec<f64> = dom
        .split("<table class=\"measured\"")
        .nth(1)
        .map(|t| {
            cells(t)
                .iter()
                .filter_map(|c| c.get("data-v")?.parse().ok())
                .collect()
        })
        .expect("measured table");
    for p in points.as_array().expect("points") {
        assert!(measured.contains(&p["measured"].as_f64().expect("measured")));
        assert!(measured.contains(&p["refined_median"].as_f64().expect("refined")));
    }

    // one screenshot per section, kept for people to look at
    let shots = root().join("target/issue-18-report");
    std::fs::create_dir_all(&shots).expect("mkdir");
    for id in ["profile", "cdf", "projections", "measured"] {
        let png = shots.join(format!("{id}.png"));
        let _ = std::fs::remove_file(&png);
        chromium(
            &[
                "--window-size=1280,1000",
                &format!("--screenshot={}", png.display()),
            ],
            &format!("{url}?section={id}"),
        );
        let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("{}: {e}", png.display()));
        assert!(
            bytes.starts_with(b"\x89PNG") && bytes.len() > 10_000,
            "{id}: blank screenshot?"
        );
    }
}
