#!/usr/bin/env python3
"""The noise ceiling at other numbers of pairs, from `multios --json validate` outputs.

Usage: validate_ceiling.py N1,N2,... W1.json W2.json ...

Resamples each workload's and target's A/A log-ratios (`aa_log_ratios`, made symmetric) as
multios_stats::ceiling_error does — the median of N draws, the error |e^-m - 1| of a perfect
projection, averaged over 2000 draws (seeded) — and prints 100 minus the mean over the points of
each target: the accuracy a perfect model would reach with N pairs per point on the machine that
produced the files. At the N the files were measured with it reproduces their `noise_ceiling`
to within the resampling's spread.
"""
import json, math, random, sys

TARGETS = ['emulate:shm', 'emulate:proxy', 'emulate:migrate', 'lwk']


def error(pool, n, rng, draws=2000):
    pool = [x for v in pool for x in (v, -v)]
    if len(pool) < 4:
        return None
    s = 0.0
    for _ in range(draws):
        d = sorted(rng.choice(pool) for _ in range(n))
        m = d[n // 2] if n % 2 else (d[n // 2 - 1] + d[n // 2]) / 2
        s += abs(math.exp(-m) - 1)
    return s / draws


def main():
    ns = [int(x) for x in sys.argv[1].split(',')]
    workloads = [w for f in sys.argv[2:] for w in json.load(open(f))['workloads']]
    print('pairs | ' + ' | '.join(TARGETS))
    for n in ns:
        rng = random.Random(1)
        cells = []
        for t in TARGETS:
            errs = []
            for w in workloads:
                pts = [p for p in w['points'] if p['target'] == t and p['invalid'] is None]
                e = error([x for p in pts for x in p.get('aa_log_ratios', [])], n, rng)
                if e is not None:
                    errs += [e] * len(pts)
            cells.append(f'{100 - 100 * sum(errs) / len(errs):.1f}' if errs else '—')
        print(f'{n} | ' + ' | '.join(cells))


if __name__ == '__main__':
    main()
