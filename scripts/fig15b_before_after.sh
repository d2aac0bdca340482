#!/usr/bin/env bash
# The Smooth Scan paper's Fig. 15b sweep (Q1 over 0.001%-100% on the
# micro-benchmark table, every access path, cold on the real device) with two
# builds of strata, alternating (before, after) in each round so both see the
# same machine, then a table of medians and ratios (scripts/fig15b_compare.py).
# Each build reads its own database (a page format change means each needs one
# it wrote). ROWS defaults to 2,000,000.
# Usage: scripts/fig15b_before_after.sh BEFORE_BIN_DIR BEFORE_DB AFTER_BIN_DIR AFTER_DB OUT [ROUNDS] [ROWS]
set -euo pipefail
before_bin=$1 before_db=$2 after_bin=$3 after_db=$4 out=$5 rounds=${6:-3} rows=${7:-2000000}
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  for side in before after; do
    bin_var=${side}_bin db_var=${side}_db
    "${!bin_var}/strata" --buffer-pool 64MiB bench smooth-scan 15b --rows "$rows" --devices real \
      --repeat 3 --timeout 20 --bench-db "${!db_var}" --out "$out/$side-$r" > "$out/$side-$r.log" 2>&1
  done
done
python3 "$(dirname "$0")/fig15b_compare.py" "$out" "$rounds" > "$out/compare.md"
cat "$out/compare.md"
