#!/usr/bin/env python3
"""Paired wall times of several commands in rotated order, with the LWK's own counts (issue #13:
the guest's first touches).

usage: rotate.py ROUNDS 'COMMAND 1' 'COMMAND 2' ...

Runs one warm-up of each, then ROUNDS rounds, forward and reversed in turn (1 2 3, 3 2 1, …),
each command split as a shell splits words and run without a shell, output thrown away. A
command containing `--summary @` gets a fresh summary file in place of `@` each run; from those
it reports the medians of the LWK's vCPU time on a CPU, KVM's faults (`pf_fixed`), the host
faults on the vCPU and proxy threads, the pages populated ahead, at map time and ahead
of the next mappings (`next_pages`, `next_hits`, `next_ms`). Prints each command's median
wall time, and per command after the first the median of the per-round ratios to the first with
their quartiles, and the load average before and after. No statistics beyond that: a wide
quartile range says the machine was noisy.

With ROTATE_PROBE set to a command that prints the cross-CPU round trip in ns (e.g. a cache-line
ping-pong between the vCPU's and the proxy's CPUs), it is run before each round and after the
last: each round's level is printed, and the ratios are also given over the rounds whose two
probes agree within 1.5x (the rounds that saw one level; crosslink.rs's rule).
"""
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time


def once(argv, summary):
    wants = "@" in argv
    argv = [summary if a == "@" else a for a in argv]
    t0 = time.perf_counter()
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"{' '.join(argv)}: exit {r.returncode}")
    counts = None
    if wants:
        with open(summary) as f:
            s = json.load(f)
        c = s["costs"]
        counts = {
            "vcpu_run_ms": c["threads"]["vcpu_run_s"] * 1e3,
            "pf_fixed": c["kvm"].get("pf_fixed", 0),
            "vcpu_faults": c["threads"].get("vcpu_faults", 0),
            "proxy_faults": c["threads"].get("proxy_faults", 0),
            "populated": c.get("populate", {}).get("pages", 0),
            "startup_ms": s["startup_s"] * 1e3,
            "run_ms": s["wall_s"] * 1e3,
            "outside_ms": dt * 1e3 - s["wall_s"] * 1e3,
            "teardown_ms": sum(t[1] for t in c.get("teardown", [])) * 1e3,
            "host_faults": c.get("host_faults", 0),
            "sync_populated": c.get("populate", {}).get("sync_pages", 0),
            "sync_ms": c.get("populate", {}).get("sync_seconds", 0) * 1e3,
            "next_pages": c.get("populate", {}).get("next", {}).get("pages", 0),
            "next_hits": c.get("populate", {}).get("next", {}).get("hits", 0),
            "next_ms": c.get("populate", {}).get("next", {}).get("seconds", 0) * 1e3,
            "doorbell_waits": c.get("doorbell_waits", 0),
            "wait_sleeps": c.get("doorbell_wait_sleeps", 0),
        }
        os.unlink(summary)
    return dt, counts


def probe(cmd):
    out = subprocess.run(shlex.split(cmd), capture_output=True, text=True, check=True).stdout
    return float(out.split()[0])


def steady(a, b):
    return max(a, b) <= 1.5 * min(a, b)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rounds = int(sys.argv[1])
    cmds = [shlex.split(c) for c in sys.argv[2:]]
    tmp = tempfile.mkdtemp(prefix="rotate-")
    summary = os.path.join(tmp, "summary.json")
    load0 = os.getloadavg()[0]
    for c in cmds:
        once(c, summary)
    walls = [[] for _ in cmds]
    counts = [[] for _ in cmds]
    probe_cmd = os.environ.get("ROTATE_PROBE")
    levels = [probe(probe_cmd)] if probe_cmd else []
    for r in range(rounds):
        order = range(len(cmds)) if r % 2 == 0 else reversed(range(len(cmds)))
        for i in order:
            dt, k = once(cmds[i], summary)
            walls[i].append(dt)
            if k:
                counts[i].append(k)
        if probe_cmd:
            levels.append(probe(probe_cmd))
    print(f"rounds {rounds}, load average {load0:.2f} -> {os.getloadavg()[0]:.2f}")
    for i, c in enumerate(sys.argv[2:]):
        line = f"[{i + 1}] median wall {statistics.median(walls[i]) * 1e3:.1f} ms"
        if i > 0:
            ratios = sorted(b / a for a, b in zip(walls[0], walls[i]))
            q = statistics.quantiles(ratios, n=4) if len(ratios) >= 2 else [ratios[0]] * 3
            line += f", /[1] median {statistics.median(ratios):.3f} [{q[0]:.3f}, {q[2]:.3f}]"
        if counts[i]:
            med = {k: statistics.median(x[k] for x in counts[i]) for k in counts[i][0]}
            line += "; " + ", ".join(f"{k} {v:.1f}" for k, v in med.items())
        if i > 0 and probe_cmd:
            kept = [b / a for r, (a, b) in enumerate(zip(walls[0], walls[i])) if steady(levels[r], levels[r + 1])]
            if kept:
                line += f"; over the {len(kept)} one-level rounds {statistics.median(kept):.3f}"
        print(line)
        print(f"    {c}")
    if probe_cmd:
        print("levels ns, before each round and after the last: " + " ".join(f"{x:.0f}" for x in levels))
    os.rmdir(tmp)


if __name__ == "__main__":
    main()
