#!/usr/bin/env python3
"""Does the cross-CPU level explain the noise of `multios validate --suite`? (issue #15)

Usage: validate_levels.py W1.json W2.json ...   (outputs of `multios --json validate --suite ...`,
                                                 with and without --level-guard, any mix)
       validate_levels.py --sides W1.json ...     (any run, also those made before the guard)

Reads each point's pairs with the level their probes saw (`levels.kept`, `levels.repeated`) and
prints, per guard setting (on / off) and target:
  * the accuracies of the files' own points (estimated, with terms, noise ceiling), recomputed over
    every file of that setting: 100 - MAPE of `projected` / `with_terms` against `measured`, and
    100 - mean(`ceiling_error`);
  * the pairs, the tries repeated, the kept pairs whose probes disagreed;
  * the A/A pairs (two runs of one side back to back, as the noise ceiling uses them) split by
    whether the two pairs they come from saw the same level (within 1.5x, crosslink::steady's
    rule) or not: median and mean |ln ratio|, per side (native, target). If the level explained
    the noise, the "different level" A/A pairs would be the noisy ones and the same-level ones quiet;
  * each side's run time against its level: the median over points of ln(run / the point's median
    run) for the pairs at <100, 100-300 and >300 ns.

With --sides: the noise ceiling per target at 6 pairs (the bootstrap of validate_ceiling.py,
seeded) from all A/A pairs, from the native side's alone and from the target side's alone. A
native run never crosses CPUs (one process pinned to the compute CPU), so noise that comes from
the cross-CPU level shows in the target side's A/A pairs and not in the native side's.
"""
import json, math, os, random, statistics as st, sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from validate_ceiling import error as ceiling_error  # noqa: E402  (the same bootstrap)

RATIO = 1.5


def same(a, b):
    lo, hi = min(a, b), max(a, b)
    return lo > 0 and hi <= lo * RATIO


def band(ns):
    if ns is None or not math.isfinite(ns):
        return '?'
    return '<100' if ns < 100 else ('100-300' if ns <= 300 else '>300')


def acc(pairs):
    pairs = [(p, m) for p, m in pairs if p is not None and m and math.isfinite(m)]
    if not pairs:
        return None
    return 100 - 100 * sum(abs(p - m) / m for p, m in pairs) / len(pairs)


def fmt(v, d=2):
    return '—' if v is None else f'{v:.{d}f}'


TARGETS = ['emulate:shm', 'emulate:proxy', 'emulate:migrate', 'lwk']


def sides(files, n=6):
    ws = [w for f in files for w in json.load(open(f)).get('workloads', [])]
    print(f'target | ceiling % at {n} pairs from: all A/A | native A/A only | target A/A only')
    for t in TARGETS:
        cells = []
        for sel in ('all', 'native', 'target'):
            rng = random.Random(1)
            errs = []
            for w in ws:
                pts = [p for p in w['points'] if p['target'] == t and p.get('invalid') is None]
                # ABBA: the A/A pairs alternate target (E E), native (N N), ...
                pool = [x for p in pts for i, x in enumerate(p.get('aa_log_ratios', []))
                        if sel == 'all' or sel == ('target' if i % 2 == 0 else 'native')]
                e = ceiling_error(pool, n, rng)
                if e is not None:
                    errs += [e] * len(pts)
            cells.append(f'{100 - 100 * sum(errs) / len(errs):.1f}' if errs else '—')
        print(f'{t} | ' + ' | '.join(cells))


def main():
    if sys.argv[1] == '--sides':
        return sides(sys.argv[2:])
    pts = defaultdict(list)  # (guard, target) -> points
    for f in sys.argv[1:]:
        d = json.load(open(f))
        for w in d.get('workloads', []):
            for p in w['points']:
                if p.get('invalid') is None and 'levels' in p:
                    pts[(bool(p['level_guard']), p['target'])].append(p)
    for (guard, t), ps in sorted(pts.items()):
        kept = [k for p in ps for k in p['levels']['kept']]
        rep = sum(len(p['levels']['repeated']) for p in ps)
        unsteady = sum(1 for k in kept if not k['steady'])
        est = acc([(p['projected'], p['measured']) for p in ps])
        wt = acc([(p.get('with_terms'), p['measured']) for p in ps]) if all(p.get('with_terms') for p in ps) else None
        ce = [p['ceiling_error'] for p in ps if p.get('ceiling_error') is not None]
        ceil = 100 - 100 * sum(ce) / len(ce) if ce else None
        bands = defaultdict(int)
        for k in kept:
            bands[band(k['level_ns'])] += 1
        print(f"guard {'on ' if guard else 'off'} {t:<16} points {len(ps):3d}  estimated {fmt(est)}  "
              f"with terms {fmt(wt)}  ceiling {fmt(ceil)}  pairs {len(kept)}  repeated {rep}  "
              f"unsteady kept {unsteady}  levels {dict(sorted(bands.items()))}")
        # A/A pairs by level agreement.
        aa = defaultdict(list)
        for p in ps:
            k = p['levels']['kept']
            for i in range(len(k) - 1):
                side = 'target' if i % 2 == 0 else 'native'
                a, b = k[i][side + '_s'], k[i + 1][side + '_s']
                if a > 0 and b > 0:
                    s = 'same' if same(k[i]['level_ns'], k[i + 1]['level_ns']) and k[i]['steady'] and k[i + 1]['steady'] else 'diff'
                    aa[(side, s)].append(abs(math.log(a / b)))
        for key in sorted(aa):
            v = aa[key]
            print(f"    A/A {key[0]:<6} {key[1]} level: n {len(v):3d}  median |ln| {st.median(v):.4f}  mean {st.mean(v):.4f}")
        # Run time against level, within each point.
        for side in ('native', 'target'):
            by = defaultdict(list)
            for p in ps:
                k = p['levels']['kept']
                if len(k) < 2:
                    continue
                med = st.median(x[side + '_s'] for x in k)
                for x in k:
                    by[band(x['level_ns'])].append(math.log(x[side + '_s'] / med))
            cells = '  '.join(f"{b}: {st.median(v):+.4f} (n {len(v)})" for b, v in sorted(by.items()))
            print(f"    {side:<6} ln(run / point median) by level: {cells}")


if __name__ == '__main__':
    main()
