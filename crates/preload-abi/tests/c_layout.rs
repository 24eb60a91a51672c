//! The C header and the Rust definition describe the same block: a C program compiled against
//! `include/multios_preload_abi.h` prints every field's offset and size and every constant, and
//! each must equal Rust's `offset_of!`/`size_of` and constant (issue #17: the preload
//! configuration is a typed contract).

use multios_preload_abi::{cost_kind, intercept, mode, Config, Cost};
use std::collections::BTreeMap;
use std::mem::{offset_of, size_of, size_of_val};
use std::path::PathBuf;
use std::process::Command;

/// Every line the C program should print, from the Rust side.
fn expected() -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    let c = Config::new();
    let k = Cost::default();
    macro_rules! field {
        ($s:ident, $cs:literal, $v:ident, $f:ident) => {
            m.insert(
                format!("{}.{}", $cs, stringify!($f)),
                format!("{} {}", offset_of!($s, $f), size_of_val(&$v.$f)),
            );
        };
    }
    m.insert("multios_preload_cost".into(), size_of::<Cost>().to_string());
    field!(Cost, "multios_preload_cost", k, kind);
    field!(Cost, "multios_preload_cost", k, reserved);
    field!(Cost, "multios_preload_cost", k, param);
    field!(Cost, "multios_preload_cost", k, samples);
    field!(Cost, "multios_preload_cost", k, nsamples);
    m.insert("multios_preload_config".into(), size_of::<Config>().to_string());
    field!(Config, "multios_preload_config", c, magic);
    field!(Config, "multios_preload_config", c, version);
    field!(Config, "multios_preload_config", c, size);
    field!(Config, "multios_preload_config", c, mode);
    field!(Config, "multios_preload_config", c, total);
    field!(Config, "multios_preload_config", c, intercept);
    field!(Config, "multios_preload_config", c, timing);
    field!(Config, "multios_preload_config", c, rewrite);
    field!(Config, "multios_preload_config", c, realtime);
    field!(Config, "multios_preload_config", c, idle_ticks);
    field!(Config, "multios_preload_config", c, patience_ticks);
    field!(Config, "multios_preload_config", c, hv_exit_ticks);
    field!(Config, "multios_preload_config", c, compute);
    field!(Config, "multios_preload_config", c, control);
    field!(Config, "multios_preload_config", c, stats_dir);
    field!(Config, "multios_preload_config", c, rewrite_cache);
    field!(Config, "multios_preload_config", c, local_stub);
    field!(Config, "multios_preload_config", c, delegated);
    field!(Config, "multios_preload_config", c, costs);
    let mut konst = |name: &str, v: u64| {
        m.insert(format!("MULTIOS_PRELOAD_{name}"), v.to_string());
    };
    konst("MAGIC", u64::from(multios_preload_abi::MAGIC));
    konst("VERSION", u64::from(multios_preload_abi::VERSION));
    konst("NR_MAX", multios_preload_abi::NR_MAX as u64);
    konst("CPU_WORDS", multios_preload_abi::CPU_WORDS as u64);
    konst("PATH_MAX", multios_preload_abi::PATH_MAX as u64);
    konst("REJECT_EXIT", multios_preload_abi::REJECT_EXIT as u64);
    konst("MODE_MIGRATE", u64::from(mode::MIGRATE));
    konst("MODE_SHM", u64::from(mode::SHM));
    konst("INTERCEPT_LAZY", u64::from(intercept::LAZY));
    konst("INTERCEPT_EAGER", u64::from(intercept::EAGER));
    konst("COST_CONSTANT", u64::from(cost_kind::CONSTANT));
    konst("COST_EXPONENTIAL", u64::from(cost_kind::EXPONENTIAL));
    konst("COST_SAMPLES", u64::from(cost_kind::SAMPLES));
    m.insert(
        "MULTIOS_PRELOAD_REJECTED_SUFFIX".into(),
        multios_preload_abi::REJECTED_SUFFIX.into(),
    );
    m
}

/// Compiles and runs tests/layout.c; returns its lines as NAME → rest.
fn from_c() -> BTreeMap<String, String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let exe = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("multios-preload-abi-layout");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(dir.join("include"))
        .arg("-o")
        .arg(&exe)
        .arg(dir.join("tests/layout.c"))
        .status()
        .unwrap_or_else(|e| panic!("running the C compiler '{cc}': {e} (install gcc or set CC)"));
    assert!(
        status.success(),
        "compiling tests/layout.c against the header failed"
    );
    let out = Command::new(&exe).output().expect("running the layout program");
    assert!(
        out.status.success(),
        "the layout program failed: {:?}",
        out.status
    );
    String::from_utf8(out.stdout)
        .expect("the layout program prints ASCII")
        .lines()
        .map(|l| {
            let (k, v) = l.split_once(' ').unwrap_or((l, ""));
            (k.to_string(), v.to_string())
        })
        .collect()
}

#[test]
fn issue_17_c_header_matches_the_rust_layout() {
    let (rust, c) = (expected(), from_c());
    for (k, v) in &rust {
        assert_eq!(
            c.get(k),
            Some(v),
            "{k}: the C header says {:?}, the Rust crate {v:?}",
            c.get(k)
        );
    }
    for k in c.keys() {
        assert!(
            rust.contains_key(k),
            "{k}: printed by tests/layout.c but not checked on the Rust side"
        );
    }
}
