#!/usr/bin/env python3
"""Where `lwk run`'s fixed cost goes, for one or more multios binaries (issue #13).

usage: phases.py RUNS MULTIOS [MULTIOS…] -- PROG [ARGS…]

Runs `MULTIOS lwk run --summary F -- PROG ARGS` RUNS times for each binary, the binaries in turn
(A B, B A, A B, …), and prints for each the median of every start-up phase (`costs.phases`), of
the VM thread's steps (`costs.vm_thread`, concurrent with the phases), of the guest's own part
(`wall_s - startup_s`: from the first guest instruction to its exit, the exit included), of the
teardown steps (`costs.teardown`), and the whole process's wall time, all in milliseconds. A
binary without a field prints "-".
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    if "--" not in sys.argv or len(sys.argv) < 5:
        sys.exit(__doc__)
    sep = sys.argv.index("--")
    runs, bins, prog = int(sys.argv[1]), sys.argv[2:sep], sys.argv[sep + 1:]
    vals = [dict() for _ in bins]
    order = []  # row names in first-seen order
    fd, summary = tempfile.mkstemp(suffix=".json")
    os.close(fd)

    def add(i, name, v):
        if name not in order:
            order.append(name)
        vals[i].setdefault(name, []).append(v * 1e3)

    for k in range(runs):
        seq = list(range(len(bins)))
        for i in (seq if k % 2 == 0 else seq[::-1]):
            t0 = time.perf_counter()
            r = subprocess.run([bins[i], "lwk", "run", "--summary", summary, "--", *prog],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            dt = time.perf_counter() - t0
            if r.returncode != 0:
                sys.exit(f"{bins[i]}: exit {r.returncode}")
            d = json.load(open(summary))
            c = d["costs"]
            for n, s in c["phases"]:
                add(i, "start-up: " + n, s)
            add(i, "start-up (startup_s)", d["startup_s"])
            for n, s in c.get("vm_thread", []):
                add(i, "  (VM thread) " + n, s)
            add(i, "guest, exit included (wall_s - startup_s)", d["wall_s"] - d["startup_s"])
            for n, s in c.get("teardown", []):
                add(i, "teardown: " + n, s)
            add(i, "whole process (wall, measured outside)", dt)
    os.unlink(summary)
    print(f"{runs} runs each of {' '.join(prog)}; load average {os.getloadavg()[0]:.2f}; medians, ms")
    print("| step | " + " | ".join(bins) + " |")
    print("|---|" + "---|" * len(bins))
    rank = ["start-up: ", "start-up (", "  (VM thread)", "guest", "teardown", "whole"]
    order.sort(key=lambda n: next(k for k, r in enumerate(rank) if n.startswith(r)))
    for name in order:
        cells = [f"{statistics.median(v[name]):.2f}" if name in v else "-" for v in vals]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
