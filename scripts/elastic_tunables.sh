#!/usr/bin/env bash
# The Elastic policy's tunables (grow, shrink, shrink-below) over the Q1 sweep
# on the modeled devices, deterministic modeled time, one CSV line per point:
#   device,grow,shrink,shrink_below,selectivity_pct,modeled_ms
# Usage: scripts/elastic_tunables.sh DB DEVICE "G:S:B G:S:B ..." > out.csv
# (DB holds the 10M-row micro-benchmark: `strata gen microbench --rows 10000000`).
set -euo pipefail
db=$1 dev=$2 cfgs=$3
strata=${STRATA:-target/release/strata}
for cfg in $cfgs; do
  IFS=: read -r grow shrink below <<<"$cfg"
  for pct in 0.005 0.01 0.05 0.1 0.5 1 2.5 5 20 100; do
    hi=$(awk -v p="$pct" 'BEGIN { h = int(100001 * p / 100 + 0.5); print (h < 1 ? 1 : h) }')
    ms=$("$strata" scan microbench --db "$db" --where "c2 >= 0 AND c2 < $hi" --device "$dev" \
      --buffer-pool 64MiB --policy elastic --grow "$grow" --shrink "$shrink" \
      --shrink-below "$below" --json |
      python3 -c 'import json, sys; print(round(json.load(sys.stdin)["io"]["modeled_ns"] / 1e6, 1))')
    echo "$dev,$grow,$shrink,$below,$pct,$ms"
  done
done
