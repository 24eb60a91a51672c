#!/usr/bin/env python3
"""Random interaction graphs in `multios map`'s format (version 3), for timing and comparing the
partitioner on sizes no recording here reaches.

  random_graph.py N SEED OUT            mixed edges: 0-4 per node (pipe, unix, futex, wakeup,
                                        signal), zero-work nodes, shared pages
  random_graph.py N SEED OUT --pipes K  K pipe edges per node, random byte counts (the shape of
                                        docs/BENCHMARKS.md's g300/g1000/g3000)
  random_graph.py N 0 OUT --star|--ring identical nodes: exact ties everywhere
"""
import json
import random
import sys


def node(i, cpu_ns):
    return {"id": 1000 + i, "tgid": 1000 + i, "comm": "w", "cpu_ns": cpu_ns, "wait_ns": 1000,
            "syscalls": {"fs": 1, "net": 0, "mm": 0, "ipc": 1, "sched": 0, "other": 0},
            "rss_pages": 100}


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    n, seed, out = int(argv[1]), int(argv[2]), argv[3]
    opts = argv[4:]
    r = random.Random(seed)
    edges, shared = [], []
    if "--star" in opts or "--ring" in opts:
        nodes = [node(i, 10**7) for i in range(n)]
        pairs = [(0, i) for i in range(1, n)] if "--star" in opts else [(i, (i + 1) % n) for i in range(n)]
        edges = [{"from": 1000 + a, "to": 1000 + b, "kind": "pipe", "bytes": 4096, "count": 10} for a, b in pairs]
    elif "--pipes" in opts:
        k = int(opts[opts.index("--pipes") + 1])
        nodes = [node(i, r.randint(10**6, 10**8)) for i in range(n)]
        for i in range(n):
            for _ in range(k):
                j = r.randrange(n)
                if j != i:
                    edges.append({"from": 1000 + i, "to": 1000 + j, "kind": "pipe",
                                  "bytes": r.randint(1, 10**6), "count": 10})
    else:
        nodes = [node(i, r.choice([0, r.randrange(1, 10**8)])) for i in range(n)]
        kinds = ["pipe", "unix", "futex", "wakeup", "signal"]
        for i in range(n):
            for _ in range(r.randrange(0, 5)):
                j = r.randrange(n)
                if j == i:
                    continue
                k = r.choice(kinds)
                e = {"from": 1000 + i, "to": 1000 + j, "kind": k,
                     "bytes": r.randrange(0, 10**6) if k in ("pipe", "unix") else 0,
                     "count": r.choice([1, 10, r.randrange(1, 1000)])}
                if k == "wakeup":
                    e["across"] = r.randrange(0, e["count"] + 1)
                edges.append(e)
        shared = [{"a": 1000 + r.randrange(n), "b": 1000 + r.randrange(n), "pages": r.randrange(1, 50)}
                  for _ in range(n // 4)]
    graph = {"format": "multios-map-graph", "version": 3, "command": ["random_graph.py"] + argv[1:],
             "duration_s": 1.0, "nodes": nodes, "edges": edges, "shared_pages": shared}
    with open(out, "w") as f:
        json.dump(graph, f)


if __name__ == "__main__":
    main(sys.argv)
