#!/usr/bin/env python3
"""Accuracy of every combination of correction terms, from `multios --json validate` outputs.

Usage: validate_terms.py [--fit] [--cache-bound] W1.json W2.json ...
       (one file per workload, as BENCHMARKS.md's commands write)

Each point carries the paper's projection S0 and, per term, the projection with that term alone
(`per_term`). A term that adds time to t_d adds its 1/S difference: 1/S = 1/S0 + sum_k (1/S_k - 1/S0)
(startup-own replaces startup where the workload has one, and images replaces startup where
the profile knows the workload's image, unless startup-own does). `anchor` is applied last, as in multios_model::terms::anchored:
S = T_n / (t_nd/S + T_n - t_nd), with t_nd = C / (1 - p) from the workload's profile summary. With
every term the result equals the run's own "with terms" column (a check printed at the end).
Multi-process workloads are left out (`procs` composes a tree and does not combine this way).

--fit          also fit one γ per workload and target on top of the paper's model (the run's own
               "fitted" column, reproduced), of every term, and of startup-own + wakeup + anchor:
               what the corrected model reaches at best with one free parameter. γ divides the
               compute C, the anchor's Δ = T_n − t_nd and the cache term's spared compute, as in
               the model; golden-section search over γ in [0.25, 4] as validate/fit.rs.
--cache-bound  the `cache` term as the model has it since the fifth session of 2026-11-26
               (multios_model::spare::share_reached), recomputed from a run made before: its
               spared or lost refill scaled by φ = min(1, g / X), g the workload's compute between
               two calls (C / calls, its profile) and X the microbenchmark's warm pointer chase
               over the L2-sized working set (`native.none.chase_ns` of the target's cache
               measurement), then bounded by the measured gains as in the model. The delegated
               data-in and data-out time G_k a point's ρ multiplies is recovered from the
               `overlap` and `cache` columns (two equations, ω_k and ρ_k known).
--fc-polled    the LWK points re-projected with the f_c that `multios_experiment`'s
               fc::polling_one_way_s takes from the run's own recorded `lwk fc` rows (term `fc`
               of term_measurements: the median of the runs within 5× the lowest) instead of the
               one the run used: f_c enters the refined model only as 2·f_c per delegated call, so
               t_d moves by 2·Δf_c·n_D exactly (for runs made before that rule, 2026-11-26).
"""
import itertools, json, math, sys

TARGETS = ['emulate:shm', 'emulate:proxy', 'emulate:migrate', 'lwk']
ADDITIVE = ['startup', 'startup-own', 'wakeup', 'touch', 'memcalls', 'images', 'overlap', 'cache']
GAMMA_RANGE = (0.25, 4.0)


def bounded_cache_s(p):
    """The bounded cache term's spared compute (s) for point p."""
    t = p['terms']
    c, om = t['cache'], t['overlap'] or {'data_in': 0.0, 'data_out': 0.0}
    s0, tnd = p['projected'], p['t_nd']
    spared = -tnd * (1 / p['per_term']['cache'] - 1 / s0)
    ov = -tnd * (1 / p['per_term']['overlap'] - 1 / s0) if 'overlap' in p['per_term'] else 0.0
    rn = c['per_call_s'] * p['delegated_calls']
    a, b, r_in, r_out = om['data_in'], om['data_out'], c['rho']['data_in'], c['rho']['data_out']
    det = a * r_out - b * r_in
    g_in, g_out = ((ov * r_out - b * (spared - rn)) / det, (a * (spared - rn) - r_in * ov) / det) if abs(det) > 1e-12 else (0.0, 0.0)

    s = p['phi'] * (rn + r_in * g_in + r_out * g_out)
    hi = p['c'] * (1 - 1 / max(c['gain_high'], 1.0))
    lo = -p['c'] * (1 / min(max(c['gain_low'], 1e-3), 1.0) - 1)
    return min(max(s, lo), hi)


def polled_fc(d):
    """The LWK's one-way f_c (s) by fc::polling_one_way_s from the run's recorded rows, or None."""
    for m in d.get('term_measurements', []):
        if m['term'] != 'fc':
            continue
        n = m['numbers']
        runs = [(n[f'run{i}.rewritten_ns'] - n[f'run{i}.native_ns']) / 2 * 1e-9
                for i in range(10) if f'run{i}.rewritten_ns' in n]
        runs = [max(v, 0.0) for v in runs]
        if not runs:
            return None
        lo = min(runs)
        kept = sorted(v for v in runs if v <= 5.0 * max(lo, 1e-9))
        k = len(kept)
        return kept[k // 2] if k % 2 else (kept[k // 2 - 1] + kept[k // 2]) / 2
    return None


def points(files, bound, refc=False):
    out = []
    for f in files:
        d = json.load(open(f))
        fc_new = polled_fc(d) if refc else None
        nums = {m['target']: m['numbers'] for m in d.get('term_measurements', []) if m['term'] == 'cache'}
        chase = {t: n.get('native.none.chase_ns') for t, n in nums.items()}
        for w in d['workloads']:
            if w['processes'] > 1:
                continue
            tnd = w['c_s'] / (1 - w['p'])
            gap_ns = 1e9 * w['c_s'] / max(w['calls'], 1)
            for p in w['points']:
                if p['invalid'] is not None or p['measured'] != p['measured']:
                    continue
                p = dict(p, t_nd=tnd, c=w['c_s'], name=w['name'])
                if fc_new is not None and p['target'] == 'lwk':
                    shift = 2 * (fc_new - p['fc_model_s']) * p['delegated_calls']
                    old = p['projected']
                    p['projected'] = tnd / (tnd / old + shift)
                    p['per_term'] = {k: tnd / (tnd / v + shift) for k, v in p['per_term'].items()}
                    p['with_terms'] = None  # the check below compares against the run's own
                x = chase.get(p['target'])
                p['phi'] = min(1.0, gap_ns / x) if bound and x else 1.0
                if bound and 'cache' in p['per_term'] and p['target'] in nums:
                    p['cache_s'] = bounded_cache_s(p)
                out.append(p)
    return out


def seconds(p, k):
    """What term k alone adds to t_d at γ = 1, in seconds (the cache's: bounded with --cache-bound)."""
    if k not in p['per_term']:
        return 0.0
    if k == 'cache' and 'cache_s' in p:
        return -p['cache_s']
    return p['t_nd'] * (1 / p['per_term'][k] - 1 / p['projected'])


def combo(p, ks, gamma=1.0):
    """The projection of p with the terms ks at γ (γ divides C, the cache's spare and Δ)."""
    tnd, c = p['t_nd'], p['c']
    td = tnd / p['projected'] - c + c / gamma
    for k in ks:
        own = 'startup-own' in ks and p['terms']['startup_own_s'] is not None
        image = 'images' in ks and ((p['terms'].get('images') or {}).get('bytes') is not None)
        # startup-own, else images (a known image), else startup: one start-up per run.
        if k == 'anchor' or (k == 'startup' and (own or image)) or (k == 'images' and own):
            continue
        td += seconds(p, k) / gamma if k == 'cache' else seconds(p, k)
    if 'anchor' in ks:
        tn = p['native_s']
        return tn / (td + (tn - tnd) / gamma)
    return tnd / td


def accuracy(ps, ks, gamma=None):
    if not ps:
        return float('nan')
    g = gamma or (lambda p: 1.0)
    return 100 - 100 * sum(abs(combo(p, ks, g(p)) - p['measured']) / p['measured'] for p in ps) / len(ps)


def best_gamma(f):
    a, b = math.log(GAMMA_RANGE[0]), math.log(GAMMA_RANGE[1])
    r = (5 ** 0.5 - 1) / 2
    c, d = b - r * (b - a), a + r * (b - a)
    fc, fd = f(math.exp(c)), f(math.exp(d))
    for _ in range(60):
        if fc >= fd:
            b, d, fd = d, c, fc
            c = b - r * (b - a)
            fc = f(math.exp(c))
        else:
            a, c, fc = c, d, fd
            d = a + r * (b - a)
            fd = f(math.exp(d))
    return math.exp((a + b) / 2)


def fitted(ps, ks):
    """Accuracy over ps with one γ per workload (and the target ps are of), fitted on its points."""
    gammas = {}
    for name in {p['name'] for p in ps}:
        own = [p for p in ps if p['name'] == name]
        gammas[name] = best_gamma(lambda g: accuracy(own, ks, lambda p: g))
    return accuracy(ps, ks, lambda p: gammas[p['name']])


def main():
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    fit, bound = '--fit' in sys.argv, '--cache-bound' in sys.argv
    ps = points(args, bound, '--fc-polled' in sys.argv)
    # `anchor` needs only the point's native time, so it is scored on runs made before the term
    # existed too (their "with terms" then lacks it: the check below is for runs that had it).
    names = [n for n in ADDITIVE if ps and n in ps[0]['per_term']] + ['anchor']
    by = {t: [p for p in ps if p['target'] == t] for t in TARGETS}
    if bound:
        print('cache bounded: φ = min(1, (C / calls) / X)')
    print('terms | ' + ' | '.join(f'{t} ({len(by[t])} pts)' for t in TARGETS))
    for r in range(len(names) + 1):
        for ks in itertools.combinations(names, r):
            if 'startup' in ks and 'startup-own' in ks:
                continue
            print((' + '.join(ks) or 'none (the paper)') + ' | ' + ' | '.join(f'{accuracy(by[t], ks):.1f}' for t in TARGETS))
    if fit:
        for label, ks in [('fitted γ, the paper\'s model', []), ('fitted γ, every term', names),
                          ('fitted γ, startup-own + wakeup + anchor', ['startup-own', 'wakeup', 'anchor']),
                          ('fitted γ, startup-own + wakeup + touch + anchor', ['startup-own', 'wakeup', 'touch', 'anchor']),
                          ('fitted γ, startup-own + wakeup + touch + memcalls + anchor',
                           ['startup-own', 'wakeup', 'touch', 'memcalls', 'anchor'])]:
            print(label + ' | ' + ' | '.join(f'{fitted(by[t], ks):.1f}' for t in TARGETS))
    if not bound:
        had = [n for n in names if n in ps[0]['per_term']] if ps else []
        check = max((abs(combo(p, had) - p['with_terms']) for p in ps if p['with_terms'] is not None), default=0)
        print(f'check: every term against the run\'s own "with terms", largest difference {check:.2e}')
        check = max((abs(combo(p, []) - p['projected']) for p in ps), default=0)
        print(f'check: the paper\'s model at γ = 1 against the run\'s "estimated", largest difference {check:.2e}')


if __name__ == '__main__':
    main()
