#!/usr/bin/env bash
# What the 22 TPC-H queries fetch from the cold tier: the tables on a cold
# storage device (`strata csd serve` on loopback), once as row tables (heap
# pages) and once as columnar tables (Parquet row groups), each query in a
# fresh process, through MJoin (the default) and through the pull path
# (`strata.skipper=false`). Reports the requests and bytes each query asked of
# the device (the statement's I/O, `strata sql --timing`): counters, the same
# on every run, not timings.
#
#   bash scripts/cold_columns.sh [SF] [OUT]   (default SF 1; OUT: a new
#       ./strata-bench-<time>/cold-columns; `results/skipper/cold-columns`
#       regenerates the committed file)
#
# Builds nothing; runs target/release/strata (and the strata-sql beside it):
# cargo build --release -p strata-cli -p strata-sql. Works in a new directory
# under /tmp, removed at the end; the device listens on 127.0.0.1:$PORT
# (default 9431).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
S="$root/target/release/strata"
sf="${1:-1}"
out="${2:-./strata-bench-$(date +%Y%m%d-%H%M%S)/cold-columns}"
port="${PORT:-9431}"
work="$(mktemp -d /tmp/strata-cold-columns.XXXXXX)"
csd=""
cleanup() {
  [ -n "$csd" ] && kill "$csd" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$out"
commit="$(git -C "$root" rev-parse --short HEAD)"
endpoint="http://127.0.0.1:$port"
"$S" csd serve --data "$work/csd" --listen "127.0.0.1:$port" > "$work/csd.log" 2>&1 &
csd=$!
sleep 1
tables="lineitem orders customer part partsupp supplier nation region"
declare -A moved
for fmt in rows columns; do
  db="$work/$fmt.db"
  "$S" gen tpch --sf "$sf" --db "$db" --table-format "$fmt" > /dev/null
  "$S" --db "$db" sql -e ANALYZE > /dev/null
  total=0
  for t in $tables; do
    line="$("$S" --db "$db" tier cold "$t" --endpoint "$endpoint" 2>&1 | grep -o '[0-9]* PUTs ([^)]*)' || true)"
    echo "$fmt $t: $line"
  done
  moved[$fmt]="$("$S" --db "$db" info 2>/dev/null | python3 -c "
import re, sys
u = {'B': 1, 'KiB': 1 << 10, 'MiB': 1 << 20, 'GiB': 1 << 30}
n = b = 0
for m in re.finditer(r'tier: cold \((\d+) objects, ([\d.]+) (\w+) in', sys.stdin.read()):
    n += int(m[1]); b += float(m[2]) * u[m[3]]
print(f'{n} objects, {b / (1 << 20):.1f} MiB')")"
done
# "(N rows, T ms; I/O: R requests, B read, …)" -> "R|B"
io() { sed -n 's/.*I\/O: \([0-9]*\) requests, \([^,]*\) read.*/\1|\2/p' | tail -1; }
{
  echo "# TPC-H SF $sf on the cold tier: requests and bytes fetched per query"
  echo
  echo "Made by \`bash scripts/cold_columns.sh $sf\` at commit $commit: the tables on"
  echo "\`strata csd serve\` (loopback), each query in a fresh process. A cell is the read"
  echo "requests and bytes the query asked of the device (\`strata sql --timing\`'s I/O):"
  echo "whole objects of pages for row tables and a columnar table's delta and trees;"
  echo "ranged GETs of the columns a query reads for column files. Counters, not timings."
  echo
  echo "| query | rows, MJoin | columns, MJoin | columns, pull | columns / rows (MJoin) |"
  echo "|---|---:|---:|---:|---:|"
} > "$out/README.md.tmp"
to_bytes() {
  python3 -c "import sys
u={'B':1,'KiB':1<<10,'MiB':1<<20,'GiB':1<<30}
n,s=sys.argv[1].split()
print(int(float(n)*u[s]))" "$1"
}
sum_rows=0
sum_cols=0
for q in "$root"/crates/sql/queries/q*.sql; do
  name="$(basename "$q" .sql)"
  r="$("$S" --db "$work/rows.db" sql --timing -f "$q" 2>&1 >/dev/null | io)"
  c="$("$S" --db "$work/columns.db" sql --timing -f "$q" 2>&1 >/dev/null | io)"
  p="$("$S" --db "$work/columns.db" sql --timing --set strata.skipper=false -f "$q" 2>&1 >/dev/null | io)"
  rb="$(to_bytes "${r#*|}")"
  cb="$(to_bytes "${c#*|}")"
  sum_rows=$((sum_rows + rb))
  sum_cols=$((sum_cols + cb))
  ratio="$(python3 -c "print(f'{$cb/max($rb,1):.2f}x')")"
  echo "| $name | ${r%|*} req, ${r#*|} | ${c%|*} req, ${c#*|} | ${p%|*} req, ${p#*|} | $ratio |" >> "$out/README.md.tmp"
  echo "$name rows=$r columns=$c pull=$p"
done
{
  echo
  echo "All 22 through MJoin: columns fetched $(python3 -c "print(f'{$sum_cols/max($sum_rows,1):.2f}x')") the bytes the row tables did."
  echo
  echo "On the device: row tables ${moved[rows]}; columnar tables ${moved[columns]} (the"
  echo "column files, and the key indexes' trees over the column rows beside them)."
} >> "$out/README.md.tmp"
mv "$out/README.md.tmp" "$out/README.md"
echo "wrote $out/README.md"
