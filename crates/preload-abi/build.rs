//! Exports the directory of the C header (`include/multios_preload_abi.h`) to the build scripts of
//! the crates that depend on this one, as `DEP_MULTIOS_PRELOAD_ABI_INCLUDE`.

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rerun-if-changed=include/multios_preload_abi.h");
    println!("cargo:include={dir}/include");
}
