#!/usr/bin/env bash
# How examples/bzip2/ was made: a real `strace -c -w -f` run of Debian's bzip2 compressing a
# generated 32 MiB text file, timed with the shell's `time`, then imported with
# `multios profile import`. Re-run to refresh (numbers will differ from machine to machine).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Deterministic, moderately compressible input: numbered lines of words.
seq 1 2000000 | awk '{ printf "%08d the quick brown fox %d jumps over %x lazy dogs\n", $1, $1 * 7919 % 100003, $1 }' \
  | head -c 33554432 > "$work/input.txt"
start=$(date +%s.%N)
strace -c -w -f -o "$here/strace-c-w-f.txt" bzip2 -9 -k -f "$work/input.txt"
end=$(date +%s.%N)
wall=$(echo "$end - $start" | bc -l)
echo "wall ${wall}s" > "$here/wall.txt"
cargo run -q --release -p multios -- profile import "$here/strace-c-w-f.txt" --strace-wall-clock \
  --wall "${wall}s" --command "bzip2 -9 -k -f input.txt" -o "$here/profile.json"
