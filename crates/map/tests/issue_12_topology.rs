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
