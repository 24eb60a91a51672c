#!/bin/bash
# The proxy's start-up, two multios binaries side by side (issue #15): for each of ROUNDS rounds and
# each binary, `emulate --compare --runs 10` of `true` and `perl -e 1` under proxy with the mechanism set
# up but nothing they call delegated (policy: kexec_load only), and per pair the emulated run's extra
# time over its native partner, in ms. Prints the median, the mean and how many pairs took > 1 ms more.
#   proxy-startup-ab.sh OLD_MULTIOS NEW_MULTIOS [ROUNDS]
set -eu
old=$1 new=$2 rounds=${3:-3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo kexec_load > "$dir/policy"
for _ in $(seq "$rounds"); do
  for b in old new; do
    exe=$old; [ "$b" = new ] && exe=$new
    for prog in "true" "perl -e 1"; do
      # shellcheck disable=SC2086
      "$exe" emulate --mechanism proxy --policy "list:$dir/policy" --fc 0us --allow-below-floor \
        --compare --runs 10 -- $prog 2>&1 | grep "pair " |
        sed 's/.*native \([0-9.]*\) \([mµ]s\).*emulated \([0-9.]*\) \([mµ]s\).*/\1 \2 \3 \4/' |
        awk -v k="$b	$prog" '{n=$1*($2=="ms"?1:0.001); e=$3*($4=="ms"?1:0.001); printf "%s\t%.3f\n", k, e-n}'
    done
  done
done > "$dir/pairs"
python3 - "$dir/pairs" <<'PY'
import statistics as st, sys
from collections import defaultdict
d = defaultdict(list)
for line in open(sys.argv[1]):
    b, p, v = line.rstrip("\n").split("\t")
    d[(b, p)].append(float(v))
for (b, p), v in sorted(d.items()):
    print(f"{b:4s} {p:10s} pairs {len(v):3d}  median {st.median(v):6.3f} ms  mean {st.mean(v):6.3f} ms  > 1 ms: {sum(x > 1 for x in v)}")
PY
