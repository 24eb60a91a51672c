#!/usr/bin/env python3
"""Paired wall times of two commands, ABBA order (issue #13: the LWK's fixed cost per run).

usage: abba.py PAIRS 'COMMAND A' 'COMMAND B'

Runs one warm-up of each, then PAIRS pairs in the order A B, B A, A B, … (each command split as a
shell splits words, run without a shell, output thrown away), and prints the median wall time of
each, the median of the per-pair ratios B/A with their 25th and 75th percentiles, and the load
average before and after. No statistics beyond that: a wide ratio range says the machine was noisy.
"""
import os
import shlex
import statistics
import subprocess
import sys
import time


def once(argv):
    t0 = time.perf_counter()
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"{' '.join(argv)}: exit {r.returncode}")
    return dt


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    pairs, a, b = int(sys.argv[1]), shlex.split(sys.argv[2]), shlex.split(sys.argv[3])
    load0 = os.getloadavg()[0]
    once(a), once(b)
    ta, tb = [], []
    for k in range(pairs):
        if k % 2 == 0:
            ta.append(once(a)), tb.append(once(b))
        else:
            tb.append(once(b)), ta.append(once(a))
    ratios = sorted(y / x for x, y in zip(ta, tb))
    q = statistics.quantiles(ratios, n=4) if len(ratios) >= 2 else [ratios[0]] * 3
    print(f"A: {sys.argv[2]}\nB: {sys.argv[3]}")
    print(f"pairs {pairs}, load average {load0:.2f} -> {os.getloadavg()[0]:.2f}")
    print(f"median wall A {statistics.median(ta) * 1e3:.1f} ms, B {statistics.median(tb) * 1e3:.1f} ms")
    print(f"B/A per pair: median {statistics.median(ratios):.3f}, quartiles [{q[0]:.3f}, {q[2]:.3f}]")


if __name__ == "__main__":
    main()
