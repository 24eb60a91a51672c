#!/usr/bin/env python3
"""Does a native run cost more after the machine sat idle? (issue #15, the noise ceiling)

Usage: gap_after_idle.py GAP N -- CMD ARGS...

Runs CMD pinned to CPU 0 (as the suite's native runs), 2*N times measured: N right after another
run of CMD (its freed memory still in the guest, caches warm) and N after GAP seconds idle, in
alternating order (0, gap | gap, 0 | ...). Prints per arm the median wall time and the median CPU
time (user + sys of the child, from getrusage: unlike wall time it does not count the time other
processes held the CPU), sys time and minor faults. This VM reports free 8 MiB blocks to its host
(kernel command line `page_reporting.page_reporting_order=11`), so memory a program frees may be
taken back by the host within seconds and cost a host fault at its next first touch: a
memory-heavy program would then be slower after a gap.
"""
import resource, statistics as st, subprocess, sys, time


def run(cmd):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    sys_s = r1.ru_stime - r0.ru_stime
    return wall, sys_s + r1.ru_utime - r0.ru_utime, sys_s, r1.ru_minflt - r0.ru_minflt


def main():
    gap, n = float(sys.argv[1]), int(sys.argv[2])
    cmd = ['taskset', '-c', '0'] + sys.argv[sys.argv.index('--') + 1:]
    run(cmd)
    res = {'0': [], 'gap': []}
    for i in range(n):
        for k in (('gap', '0') if i % 2 else ('0', 'gap')):
            if k == 'gap':
                time.sleep(gap)
            else:
                run(cmd)  # the run right before
            res[k].append(run(cmd))
    for k, v in res.items():
        med = lambda j: st.median(x[j] for x in v)
        print(f"after {k:>3}: n {len(v)}  wall {med(0):.4f} s  cpu {med(1):.4f} s "
              f"(min {min(x[1] for x in v):.4f}, max {max(x[1] for x in v):.4f})  sys {med(2):.4f} s  "
              f"minflt {med(3):.0f}")


if __name__ == '__main__':
    main()
