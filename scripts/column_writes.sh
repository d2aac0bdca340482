#!/usr/bin/env bash
# UPDATE and DELETE of a columnar table's rows beside the row heap, at TPC-H
# SF 1: point deletes and updates by l_orderkey, range deletes of 1% and 10%
# of lineitem, Q6 before and after them (the delete set read by every scan),
# and the merge of the delta (`strata compact --format columns`).
#
#   bash scripts/column_writes.sh [WORKDIR]   (default: a new directory under /tmp)
#
# Builds nothing and changes nothing outside WORKDIR: it runs target/debug/strata
# (build it first: cargo build --workspace --bins). Times are each statement's
# own (`strata sql --timing`), in fresh processes, on the OS page cache.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
S="$root/target/debug/strata"
work="${1:-$(mktemp -d /tmp/strata-column-writes.XXXXXX)}"
mkdir -p "$work"
Q6="$(cat "$root/crates/sql/queries/q06.sql")"
echo "commit $(git -C "$root" rev-parse --short HEAD), work in $work"
for fmt in columns rows; do
  db="$work/tpch_$fmt"
  rm -rf "$db"
  /usr/bin/time -f "gen --table-format $fmt: %e s" "$S" gen tpch --sf 1 --db "$db" --table-format "$fmt" > /dev/null
  "$S" sql --db "$db" -e ANALYZE > /dev/null
  t() {
    echo "== $fmt: $1"
    "$S" sql --db "$db" --timing --execute="$2" 2>&1 | grep -E '^\(|^\| *[0-9]|^error' | tail -2 || true
  }
  for i in 1 2 3; do t "Q6 before ($i)" "$Q6"; done
  for k in 1000000 2000001 3000002; do t "point delete l_orderkey=$k" "DELETE FROM lineitem WHERE l_orderkey = $k"; done
  for k in 4000001 5000002 5500001; do t "point update l_orderkey=$k" "UPDATE lineitem SET l_quantity = l_quantity + 1 WHERE l_orderkey = $k"; done
  t "range delete 1%" "DELETE FROM lineitem WHERE l_orderkey < 60000"
  for i in 1 2 3; do t "Q6 after 1% deleted ($i)" "$Q6"; done
  t "range delete 10%" "DELETE FROM lineitem WHERE l_orderkey >= 600000 AND l_orderkey < 1200000"
  for i in 1 2 3; do t "Q6 after 11% deleted ($i)" "$Q6"; done
  if [ "$fmt" = columns ]; then
    /usr/bin/time -f "merge: %e s" "$S" compact --format columns lineitem --db "$db" 2>&1 | tail -2
    for i in 1 2 3; do t "Q6 after the merge ($i)" "$Q6"; done
  fi
  t "rows left" "SELECT count(*) FROM lineitem"
done
