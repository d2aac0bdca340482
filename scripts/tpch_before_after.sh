#!/usr/bin/env bash
# TPC-H SF 1 reads with two builds of strata, alternating (before, after) in
# each round so both see the same machine, then a table of medians and
# ratios (scripts/tpch_compare.py). Each build reads its own database (a
# format change means each needs one it wrote).
# Usage: scripts/tpch_before_after.sh BEFORE_BIN_DIR BEFORE_DB AFTER_BIN_DIR AFTER_DB OUT [ROUNDS]
set -euo pipefail
before_bin=$1 before_db=$2 after_bin=$3 after_db=$4 out=$5 rounds=${6:-3}
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  for side in before after; do
    bin_var=${side}_bin db_var=${side}_db
    "${!bin_var}/strata-bench-tpch" --sf 1 --bench-db "${!db_var}" --configs smooth,full \
      --repeat 1 --timeout 60 --out "$out/$side-$r" > "$out/$side-$r.log" 2>&1
  done
done
python3 "$(dirname "$0")/tpch_compare.py" "$out" "$rounds" > "$out/compare.md"
cat "$out/compare.md"
