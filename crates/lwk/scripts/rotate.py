#!/usr/bin/env python3
"""Wall times of several shell commands in rotating rounds, as ratios to the first (issues #13, #15).

usage: rotate.py ROUNDS 'COMMAND 1' 'COMMAND 2' ...

Runs each command once to warm up, then ROUNDS rounds, each running every command once through the
shell (output thrown away), in the given order in even rounds and reversed in odd ones. Prints for
each command its median wall time and the median of its per-round ratios to the first command with
their 25th and 75th percentiles: a ratio of one round compares runs made seconds apart, which is
what a noisy machine allows. No statistics beyond that.
"""
import statistics
import subprocess
import sys
import time


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    rounds, cmds = int(sys.argv[1]), sys.argv[2:]
    quiet = dict(shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for c in cmds:
        subprocess.run(c, **quiet)
    times = {c: [] for c in cmds}
    for r in range(rounds):
        for c in cmds if r % 2 == 0 else cmds[::-1]:
            t0 = time.perf_counter()
            subprocess.run(c, **quiet)
            times[c].append(time.perf_counter() - t0)
    base = times[cmds[0]]
    for c in cmds:
        ratios = sorted(x / y for x, y in zip(times[c], base))
        q = lambda f: ratios[min(len(ratios) - 1, int(f * len(ratios)))]
        print(f"{c[:70]:<70} median {statistics.median(times[c]) * 1e3:8.1f} ms   "
              f"ratio to the first {statistics.median(ratios):.3f} [{q(0.25):.3f}, {q(0.75):.3f}]")


if __name__ == "__main__":
    main()
