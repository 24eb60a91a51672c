#!/usr/bin/env bash
# The test suite: formatting, lints as errors, then every unit, property and integration test.
# Tests that need root, KVM or eBPF run for real and fail loudly where the facility is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
# On a fresh machine, install what the tests need (compilers, eBPF tools, workloads, MPI), as demo.sh does.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then bash scripts/deps.sh; fi
cargo fmt --all -- --check
# --release: its build scripts and proc macros are the release test build's own (built once, not twice).
cargo clippy --release --workspace --all-targets -q -- -D warnings
cargo test --workspace --release --no-fail-fast 2>&1
# Loom model checks of the AAM runtime's wait-free protocols (issue #11): a cfg of their own, built in
# their own target directory so the normal build is untouched (≈ 2.5 min to build loom once, ≈ 10 s to run).
RUSTFLAGS="--cfg multios_loom" CARGO_TARGET_DIR=target/loom cargo test --release -p multios-aam-sync --test loom 2>&1
# The Python package (issue #18): built over the workspace's target/ (python/.cargo/config.toml), linted,
# installed, then its tests and the example notebook against the release binary built above.
cargo fmt --manifest-path python/Cargo.toml -- --check
cargo clippy --manifest-path python/Cargo.toml --release -q -- -D warnings
python3 -m pip install -q --disable-pip-version-check ./python 2>/dev/null \
  || python3 -m pip install -q --disable-pip-version-check --break-system-packages ./python
cargo build --release -q -p multios
MULTIOS_BIN="$PWD/target/release/multios" python3 -m pytest -q python/tests
