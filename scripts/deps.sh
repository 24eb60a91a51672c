#!/usr/bin/env bash
# Installs what multios needs to build and test on a Debian machine (run as root).
# Used by .ci/run and by scripts/demo.sh when something is missing.
set -euo pipefail
packages=(
  build-essential pkg-config clang llvm libelf-dev zlib1g-dev libseccomp-dev bpftool  # toolchain, eBPF
  fonts-dejavu-core                                                                   # plot text
  bzip2 busybox-static strace linux-perf stress-ng hyperfine bc perl                   # real workloads, references
  hwloc-nox                                                                           # map: lstopo's XML topologies
  racket                                                                              # Multiverse's benchmarks (bench multiverse)
  openjdk-17-jdk-headless                                                             # lwk: a JVM sizes its heap from sysinfo
  python3.11 libpython3.11-testsuite                                                  # lwk conformance: CPython's own tests
  xz-utils gzip sqlite3 python3 make tar                                              # validate --suite bundled
  curl                                                                                # map: a real TCP server and client
  openmpi-bin mpich lammps hpcc                                                              # MPI ranks, LAMMPS, HPC Challenge
  fio liburing-dev e2fsprogs mount                                                    # lwk kernel-shared mappings (issue #14): io_uring, loop devices
  chromium python3 python3-pip python3-venv                                           # report check (headless), Python package
  golang-go                                                                           # emulate: a cgo Go program under the lazy interception
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if command -v rustup >/dev/null; then
  rustup component add rustfmt clippy >/dev/null 2>&1 || true
fi
command -v cargo >/dev/null || { echo "deps: cargo not found: install Rust (https://rustup.rs)" >&2; exit 1; }
# The Python package's build and test tools (issue #18), from PyPI, for the python3 on PATH (pyenv's, or
# Debian's, which needs --break-system-packages under PEP 668).
py_tools=('maturin>=1.5,<2' pandas pyarrow matplotlib pytest nbclient nbformat ipykernel)
python3 -m pip install -q --disable-pip-version-check "${py_tools[@]}" >/dev/null 2>&1 \
  || python3 -m pip install -q --disable-pip-version-check --break-system-packages "${py_tools[@]}" >/dev/null
# An offline Chrome-trace viewer for issue_18_trace_viewer: speedscope from npm (its built web app is opened
# in headless chromium; node is needed only to install it). npm comes with nodejs from some sources, and
# is Debian's `npm` package otherwise.
if [ ! -f /usr/local/lib/multios-js/node_modules/speedscope/dist/release/index.html ]; then
  if ! command -v npm >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends npm >/dev/null
  fi
  npm install -s --prefix /usr/local/lib/multios-js --no-audit --no-fund speedscope@1.25.0 >/dev/null
fi
