// Declares the cfg the loom model checks are built under (RUSTFLAGS="--cfg multios_loom"), so
// that normal builds do not warn about an unknown cfg.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(multios_loom)");
}
