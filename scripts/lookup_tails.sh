#!/usr/bin/env bash
# Where the slowest point lookups beside a long statement come from.
#
# `strata bench serve-mixed` measures lookups beside TPC-H Q1, which reads
# from the device; its slowest lookups mix the device's tail with the CPU's.
# This script takes the device out: every lookup's pages are in the pool (a
# key range of 60,000 orders, warmed first), and the long statements are
# pure CPU (two connections summing generate_series, one per core). It runs
# pgbench's prepared lookups for a while in each of these configurations,
# one after the other, and prints the latency spread of each:
#
#   alone            no long statement
#   beside           two CPU-bound statements at the server's priority
#   beside, nice 19  the same with `strata serve --statement-nice 19` (the
#                    idle scheduling class)
#   beside, slices   the server and pgbench ask Linux for a 100 us time slice
#                    (sched_setattr; Linux 6.12 on): a thread that wakes up
#                    with a shorter slice than the running one may preempt it
#
# Usage: scripts/lookup_tails.sh TPCH_DB [SECONDS]
#   TPCH_DB   a strata database made by `strata gen tpch --sf 1`
#   SECONDS   of lookups per configuration (default 15)
# Needs target/release/strata-server, PostgreSQL 15's pgbench and psql
# (/usr/lib/postgresql/15/bin, or PGBIN), python3. Changes nothing on the
# machine; writes only under a temporary directory, and prints its report
# (markdown) on standard output.
set -euo pipefail

db=${1:?usage: scripts/lookup_tails.sh TPCH_DB [SECONDS]}
secs=${2:-15}
here=$(cd "$(dirname "$0")/.." && pwd)
server=$here/target/release/strata-server
pgbin=${PGBIN:-/usr/lib/postgresql/15/bin}
[ -x "$server" ] || { echo "lookup_tails: build it first: cargo build --release -p strata-server" >&2; exit 2; }
[ -f "$db/catalog.json" ] || { echo "lookup_tails: $db is not a strata database (strata gen tpch --sf 1)" >&2; exit 2; }
[ -x "$pgbin/pgbench" ] || { echo "lookup_tails: no pgbench in $pgbin (set PGBIN)" >&2; exit 2; }

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

cat > "$work/lookup.sql" <<'EOF'
\set k random(1, 60000)
SELECT o_totalprice FROM orders WHERE o_orderkey = :k;
EOF
for _ in $(seq 200); do
  echo "SELECT sum(value % 7) FROM generate_series(1, 200000000);"
done > "$work/hog.sql"

# Runs the command after `--` with a 100 us time slice (inherited by every
# thread it starts).
cat > "$work/short_slice.py" <<'EOF'
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
attr = ctypes.create_string_buffer(struct.pack("IIQiIQQQII", 56, 0, 0, 0, 0, 100_000, 0, 0, 0, 0))
if libc.syscall(314, 0, attr, 0) != 0:  # sched_setattr, x86_64
    sys.exit(f"sched_setattr: {os.strerror(ctypes.get_errno())}")
os.execvp(sys.argv[1], sys.argv[1:])
EOF

port=$((55000 + RANDOM % 1000))

# run NAME HOGS WRAP SERVER_OPTIONS...
run() {
  local name=$1 hogs=$2 wrap=$3; shift 3
  $wrap "$server" --db "$db" --buffer-pool 1GiB serve --listen 127.0.0.1:$port "$@" \
    > "$work/server.log" 2>&1 &
  local sp=$!
  for _ in $(seq 100); do grep -q "on 127.0.0.1" "$work/server.log" && break; sleep 0.1; done
  local pg=("$pgbin/pgbench" -h 127.0.0.1 -p $port -U strata -n -M prepared -f "$work/lookup.sql")
  "${pg[@]}" -T 3 strata > /dev/null # warm the pages of the key range
  local hp=()
  for _ in $(seq "$hogs"); do
    "$pgbin/psql" -h 127.0.0.1 -p $port -U strata -q -f "$work/hog.sql" strata > /dev/null 2>&1 &
    hp+=($!)
  done
  [ "$hogs" = 0 ] || sleep 1
  rm -f "$work"/pgbench_log.*
  (cd "$work" && $wrap "${pg[@]}" -T "$secs" -l strata > /dev/null)
  kill "${hp[@]}" 2>/dev/null || true
  kill $sp; wait $sp 2>/dev/null || true
  python3 - "$name" "$work" <<'EOF'
import glob, sys
ms = sorted(int(l.split()[2]) / 1000 for f in glob.glob(sys.argv[2] + "/pgbench_log.*") for l in open(f))
at = lambda q: ms[min(len(ms) - 1, int(len(ms) * q))]
print(f"| {sys.argv[1]} | {len(ms)} | {at(.5):.3f} | {at(.99):.3f} | {at(.999):.3f} | {ms[-1]:.3f} |")
EOF
}

echo "# Where the slowest point lookups beside a long statement come from"
echo
echo "Made by \`scripts/lookup_tails.sh $*\` at commit \`$(git -C "$here" rev-parse --short HEAD)\` (the server binary: $server)."
echo
echo "Lookups (pgbench's prepared \`SELECT o_totalprice FROM orders WHERE o_orderkey = :k\`, k uniform in 1–60,000, pages in the pool), ${secs} s per configuration, one client; two long statements (\`SELECT sum(value % 7) FROM generate_series(1, 200000000)\`, over and over) on two other connections where named. Linux $(uname -r), $(nproc) cores. Latencies as pgbench logs them, in ms."
echo
echo "| configuration | lookups | median | p99 | p99.9 | max |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
run "alone" 0 ""
run "beside two CPU-bound statements" 2 ""
run "beside them, --statement-nice 19" 2 "" --statement-nice 19
run "beside them, 100 us slices for the server and pgbench" 2 "python3 $work/short_slice.py"
run "alone, after" 0 ""
