#!/usr/bin/env python3
"""Compares `map partition --json` outputs of two binaries: compare_partitions.py OLD_DIR NEW_DIR
(one file per graph, same names in both).
Same clusters (node ids, in order) and the same T, W terms and T per level (exactly, else within 1e-9
relative, which is reported)."""
import json, os, sys

old_dir, new_dir = sys.argv[1], sys.argv[2]
bad = 0
for name in sorted(os.listdir(old_dir)):
    if not name.endswith(".json"):
        continue
    if os.path.getsize(os.path.join(old_dir, name)) == 0:
        print(f"{name:14} (old output empty: still running?)")
        continue
    o = json.load(open(os.path.join(old_dir, name)))
    n = json.load(open(os.path.join(new_dir, name)))
    notes = []
    for part in ("networkedos", "louvain"):
        if o[part]["clusters"] != n[part]["clusters"]:
            notes.append(f"{part}: clusters differ")
        for key, a in o[part]["quality"].items():
            b = n[part]["quality"][key]
            if a != b:
                rel = abs(a - b) / max(abs(a), abs(b), 1.0)
                notes.append(f"{part}.{key}: {a} vs {b} (rel {rel:.1e})")
    lo, ln = o["networkedos"]["levels"], n["networkedos"]["levels"]
    if lo != ln:
        notes.append(f"levels differ ({len(lo)} vs {len(ln)})")
    bad += bool(notes)
    t = o["networkedos"]["quality"]
    print(f"{name:14} N={t['n']:4} T={t['t']:.6e} levels={len(lo):4}  " + ("identical" if not notes else "; ".join(notes)))
print("DIFFERENCES:", bad)
sys.exit(1 if bad else 0)
