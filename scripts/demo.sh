#!/usr/bin/env bash
# The main job on the bundled default workload: profile → project → emulate, with a table and plots.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then bash scripts/deps.sh; fi
cargo build --release -q -p multios
exec ./target/release/multios demo "$@"
