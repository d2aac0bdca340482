#!/usr/bin/env bash
# Point lookups through an index on a columnar table beside the row heap, at
# TPC-H SF 1: lineitem by l_partkey (about 30 rows each, spread over the
# table: min/max pruning keeps every page, so only the index narrows the
# read), projecting 3 columns and all 16, cold (a fresh process; strata reads
# heap pages and column files with O_DIRECT, so nothing is in the OS cache
# for it) and warm (the same statement again in the same process).
#
#   bash scripts/column_lookups.sh [WORKDIR]   (default: a new directory under /tmp)
#
# Builds nothing and changes nothing outside WORKDIR: it runs $STRATA, by
# default target/release/strata (cargo build --release -p strata-cli
# -p strata-sql; a dev build's CPU time would swamp a warm lookup's). A WORKDIR
# that already holds tpch_columns and tpch_rows (from this script) is reused.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
S="${STRATA:-$root/target/release/strata}"
work="${1:-$(mktemp -d /tmp/strata-column-lookups.XXXXXX)}"
mkdir -p "$work"
echo "commit $(git -C "$root" rev-parse --short HEAD), work in $work"
keys="17 4711 99999 123456 150001 199990"
for fmt in columns rows; do
  db="$work/tpch_$fmt"
  if [ ! -f "$db/catalog.json" ]; then
    /usr/bin/time -f "gen --table-format $fmt: %e s" "$S" gen tpch --sf 1 --db "$db" --table-format "$fmt" > /dev/null
    "$S" sql --db "$db" -e ANALYZE > /dev/null
  fi
done
for proj in "l_orderkey, l_quantity, l_extendedprice" "*"; do
  for k in $keys; do
    q="SELECT $proj FROM lineitem WHERE l_partkey = $k"
    for fmt in columns rows; do
      db="$work/tpch_$fmt"
      # cold, then warm: the statement twice in one process.
      times=$("$S" sql --db "$db" --timing --format csv --execute="$q" --execute="$q" 2>&1 >/dev/null \
        | grep -E '^\(' | sed -E 's/^\(([0-9]+) rows?, ([0-9.]+) ms; I\/O: ([0-9]+) requests, ([^,]+) read.*/\2 ms (\3 requests, \4)/' | paste -sd '|')
      rows=$("$S" sql --db "$db" --format csv --execute="SELECT count(*) FROM lineitem WHERE l_partkey = $k" | tail -1)
      echo "lookup fmt=$fmt proj=\"$proj\" l_partkey=$k rows=$rows cold_warm_ms=$times"
    done
  done
done
"$S" sql --db "$work/tpch_columns" --execute="EXPLAIN ANALYZE SELECT l_orderkey, l_quantity, l_extendedprice FROM lineitem WHERE l_partkey = 4711" | grep -E 'StrataColumnScanExec' || true
