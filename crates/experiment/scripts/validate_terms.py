#!/usr/bin/env python3
"""Accuracy of every combination of correction terms, from `multios --json validate` outputs.

Usage: validate_terms.py W1.json W2.json ...   (one file per workload, as BENCHMARKS.md's commands write)

Each point carries the paper's projection S0 and, per term, the projection with that term alone
(`per_term`). A term that adds time to t_d adds its 1/S difference: 1/S = 1/S0 + sum_k (1/S_k - 1/S0)
(startup-own replaces startup). `anchor` is applied last, as in multios_model::terms::anchored:
S = T_n / (t_nd/S + T_n - t_nd), with t_nd recovered from anchor's own column. With every term the
result equals the run's own "with terms" column (a check printed at the end). Multi-process
workloads are left out (`procs` composes a tree and does not combine this way).
"""
import itertools, json, sys

TARGETS = ['emulate:shm', 'emulate:proxy', 'emulate:migrate', 'lwk']
ADDITIVE = ['startup', 'startup-own', 'wakeup', 'overlap', 'cache']


def points(files):
    out = []
    for f in files:
        for w in json.load(open(f))['workloads']:
            if w['processes'] > 1:
                continue
            out += [p for p in w['points'] if p['invalid'] is None and p['measured'] == p['measured']]
    return out


def combo(p, ks):
    s0 = p['projected']
    inv = 1 / s0
    for k in ks:
        if k == 'anchor' or (k == 'startup' and 'startup-own' in ks):
            continue
        inv += 1 / p['per_term'][k] - 1 / s0
    s = 1 / inv
    if 'anchor' in ks and abs(1 / s0 - 1) > 1e-12:
        tn = p['native_s']
        tnd = tn * (1 / p['per_term']['anchor'] - 1) / (1 / s0 - 1)
        s = tn / (tnd / s + tn - tnd)
    return s


def accuracy(ps, ks):
    if not ps:
        return float('nan')
    return 100 - 100 * sum(abs(combo(p, ks) - p['measured']) / p['measured'] for p in ps) / len(ps)


def main():
    ps = points(sys.argv[1:])
    names = [n for n in ADDITIVE + ['anchor'] if ps and n in ps[0]['per_term']]
    by = {t: [p for p in ps if p['target'] == t] for t in TARGETS}
    print('terms | ' + ' | '.join(f'{t} ({len(by[t])} pts)' for t in TARGETS))
    for r in range(len(names) + 1):
        for ks in itertools.combinations(names, r):
            if 'startup' in ks and 'startup-own' in ks:
                continue
            print((' + '.join(ks) or 'none (the paper)') + ' | ' + ' | '.join(f'{accuracy(by[t], ks):.1f}' for t in TARGETS))
    check = max((abs(combo(p, names) - p['with_terms']) for p in ps if p['with_terms'] is not None), default=0)
    print(f'check: every term against the run\'s own "with terms", largest difference {check:.2e}')


if __name__ == '__main__':
    main()
