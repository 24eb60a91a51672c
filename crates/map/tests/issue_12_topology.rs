//! Issue #12: topology strings that do not parse say where; the sysfs topology is this machine's.

use multios_map::topology::{Topology, TopologyError};

#[test]
fn issue_12_topology_errors_name_the_column() {
    let cases = [
        ("pack:2 core:64 pu:0", 16, "not a positive count"),
        ("pack:2 kore:64", 8, "unknown level 'kore'"),
        ("pack:2 core64", 8, "expected NAME:COUNT"),
        ("core:4 pack:2", 8, "must come before"),
    ];
    for (text, column, what) in cases {
        match Topology::synthetic(text) {
            Err(TopologyError::At {
                column: c, what: w, ..
            }) => {
                assert_eq!(c, column, "{text}");
                assert!(w.contains(what), "{text}: {w}");
            }
            other => panic!("{text}: {other:?}"),
        }
    }
}

#[test]
fn issue_12_topology_sizes() {
    for (text, pus) in [
        ("pack:2 core:64 pu:1", 128),
        ("pack:1 core:16", 16),
        ("pack:2 l3:4 core:8 pu:2", 128),
    ] {
        assert_eq!(Topology::synthetic(text).expect(text).len(), pus, "{text}");
    }
    let here = Topology::from_sysfs().expect("sysfs");
    assert!(!here.is_empty());
}

/// hwloc's `lstopo` (Debian: hwloc-nox) writes the XML or the synthetic description.
fn lstopo(args: &[&str]) -> String {
    let out = std::process::Command::new("lstopo")
        .args(["--no-io"])
        .args(args)
        .output()
        .expect("lstopo runs (Debian package hwloc-nox; scripts/deps.sh installs it)");
    assert!(
        out.status.success(),
        "lstopo {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

fn same_distances(a: &Topology, b: &Topology, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: PU count");
    let os = |t: &Topology| t.pus.iter().map(|p| p.os).collect::<Vec<_>>();
    assert_eq!(os(a), os(b), "{what}: PUs in tree order");
    for i in 0..a.len() {
        for j in 0..a.len() {
            assert_eq!(a.hops(i, j), b.hops(i, j), "{what}: hops between PUs {i} and {j}");
        }
    }
}

#[test]
fn issue_12_hwloc_xml_of_synthetic_machines_matches_the_string() {
    let dir = std::env::temp_dir().join(format!("multios-map-hwloc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch");
    for spec in [
        "pack:2 core:64 pu:1",
        "pack:2 numa:2 l3:2 core:4 pu:2",
        "pack:4 l2:4 core:2 pu:1",
    ] {
        let file = dir.join("t.xml");
        std::fs::write(&file, lstopo(&["--input", spec, "--of", "xml", "-"])).expect("write");
        let xml = Topology::resolve(Some(file.to_str().expect("path"))).expect("the XML parses");
        let ours = Topology::synthetic(spec).expect("the string parses");
        same_distances(&xml, &ours, spec);
        // what lstopo prints as the synthetic description of the same machine parses too
        let printed = lstopo(&["--input", spec, "--of", "synthetic", "-"]);
        let back = Topology::synthetic(printed.trim()).expect("lstopo's synthetic output parses");
        same_distances(&back, &ours, printed.trim());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn issue_12_hwloc_xml_of_this_machine_matches_sysfs() {
    let xml = multios_map::topology::hwloc::from_xml(&lstopo(&["--of", "xml", "-"]), "this machine")
        .expect("lstopo's XML of this machine parses");
    let sysfs = Topology::from_sysfs().expect("sysfs");
    let mut a: Vec<u32> = xml.pus.iter().map(|p| p.os).collect();
    let mut b: Vec<u32> = sysfs.pus.iter().map(|p| p.os).collect();
    a.sort_unstable();
    b.sort_unstable();
    assert_eq!(a, b, "the same CPUs");
    let printed = lstopo(&["--of", "synthetic", "-"]);
    let synth = Topology::synthetic(printed.trim()).expect("lstopo --of synthetic parses");
    same_distances(&xml, &synth, printed.trim());
}

#[test]
fn issue_12_hwloc_xml_errors_name_the_file_and_element() {
    let dir = std::env::temp_dir().join(format!("multios-map-hwloc-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch");
    let good = lstopo(&["--input", "pack:1 core:2 pu:1", "--of", "xml", "-"]);
    let file = dir.join("bad.xml");
    // a PU without its CPU number
    let pu = good.find("<object type=\"PU\" os_index=\"1\"").expect("PU 1");
    let line = good[..pu].lines().count() + usize::from(good[..pu].ends_with('\n'));
    std::fs::write(
        &file,
        good.replacen("<object type=\"PU\" os_index=\"1\"", "<object type=\"PU\"", 1),
    )
    .expect("write");
    let e = Topology::resolve(Some(file.to_str().expect("path")))
        .expect_err("no os_index")
        .to_string();
    assert!(
        e.contains("bad.xml, line ") && e.contains(&format!("line {line},")) && e.contains("os_index"),
        "{e} (PU on line {line})"
    );
    // cut short
    std::fs::write(&file, &good[..good.len() / 2]).expect("write");
    let e = Topology::resolve(Some(file.to_str().expect("path")))
        .expect_err("truncated")
        .to_string();
    assert!(
        e.contains("bad.xml, line ") && e.contains("not well-formed"),
        "{e}"
    );
    // missing
    let e = Topology::resolve(Some("/nonexistent/machine.xml"))
        .expect_err("missing")
        .to_string();
    assert!(
        e.contains("/nonexistent/machine.xml") && e.contains("lstopo --of xml"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
