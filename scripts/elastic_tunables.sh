#!/usr/bin/env bash
# The Elastic policy's tunables (grow, shrink, shrink-below) over the Q1 sweep,
# one CSV line per point:
#   device,grow,shrink,shrink_below,selectivity_pct,ms
# On a modeled device (hdd, ssd) ms is the deterministic modeled time; on the
# real device it is the median wall time of 3 cold runs (direct I/O).
# A token `full` or `sort` instead of G:S:B runs that path instead (the
# baselines, side by side in the same run; the line's G,S,B are the path name).
# Usage: scripts/elastic_tunables.sh DB DEVICE "G:S:B G:S:B ..." > out.csv
# (DB holds the 10M-row micro-benchmark: `strata gen microbench --rows 10000000`).
set -euo pipefail
db=$1 dev=$2 cfgs=$3
strata=${STRATA:-target/release/strata}
if [ "$dev" = real ]; then
  field='d["wall_ms"]' repeat=3
else
  field='d["io"]["modeled_ns"] / 1e6' repeat=1
fi
# Points outer, settings inner: on the real device each point's runs are side
# by side in time.
for pct in 0.005 0.01 0.05 0.1 0.5 1 2.5 5 20 100; do
  hi=$(awk -v p="$pct" 'BEGIN { h = int(100001 * p / 100 + 0.5); print (h < 1 ? 1 : h) }')
  for cfg in $cfgs; do
    if [ "$cfg" = full ] || [ "$cfg" = sort ]; then
      how=(--path "$cfg") grow=$cfg shrink=$cfg below=$cfg
    else
      IFS=: read -r grow shrink below <<<"$cfg"
      how=(--policy elastic --grow "$grow" --shrink "$shrink" --shrink-below "$below")
    fi
    ms=$(for _ in $(seq "$repeat"); do
      "$strata" scan microbench --db "$db" --where "c2 >= 0 AND c2 < $hi" --device "$dev" \
        --buffer-pool 64MiB "${how[@]}" --json |
        python3 -c "import json, sys; d = json.load(sys.stdin); print($field)"
    done | sort -g | awk '{ v[NR] = $1 } END { printf "%.1f\n", v[int((NR + 1) / 2)] }')
    echo "$dev,$grow,$shrink,$below,$pct,$ms"
  done
done
