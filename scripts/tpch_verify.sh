#!/usr/bin/env bash
# Checks strata's answers to the 22 TPC-H queries against DuckDB's at any scale
# factor, with the release binaries:
#
#   bash scripts/tpch_verify.sh 1                 # SF 1, default access path (smooth)
#   bash scripts/tpch_verify.sh 1 optimizer       # another strata.access_path
#
# Generates the data into a scratch directory (strata tables and, from the same
# batches, Parquet), runs every query with `strata sql --format csv`, and
# compares with scripts/tpch_check.py (TPC-H clause 2.1.3.5 tolerances).
# Needs `python3 -m pip install duckdb==1.4.4`.
set -euo pipefail
cd "$(dirname "$0")/.."
sf=${1:-1}
path=${2:-smooth}
dir=${TPCH_DIR:-/tmp/strata-tpch-sf$sf}
cargo build --release -q -p strata-cli -p strata-sql
strata=./target/release/strata
if [ ! -f "$dir/db/catalog.json" ] || [ ! -f "$dir/parquet/lineitem.parquet" ]; then
  rm -rf "$dir"
  mkdir -p "$dir"
  "$strata" --db "$dir/db" gen tpch --sf "$sf" --parquet "$dir/parquet"
fi
out="$dir/out-$path"
rm -rf "$out"
mkdir -p "$out"
for q in crates/sql/queries/q*.sql; do
  n=$(basename "$q" .sql)
  start=$(date +%s.%N)
  "$strata" --db "$dir/db" sql --format csv --set "strata.access_path=$path" -f "$q" > "$out/$n.csv"
  printf '%s %.2f s\n' "$n" "$(echo "$(date +%s.%N) - $start" | bc)"
done
python3 scripts/tpch_check.py --parquet "$dir/parquet" --queries crates/sql/queries --results "$out"
