#!/usr/bin/env bash
# Tests scripts/tpch_check.py without strata's SQL layer: generates TPC-H SF 0.01
# as Parquet with `strata gen tpch --parquet-only`, then runs
# scripts/test_tpch_check.py on it (DuckDB's answers accepted as strata's,
# perturbed copies rejected). Needs `pip install duckdb==1.4.4`.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The strata binary `cargo test --workspace` built (as .ci/run does first);
# `cargo run -p strata-cli` would rebuild dependencies with the CLI's own
# feature set, minutes on a cold CI machine.
strata="${CARGO_TARGET_DIR:-target}/debug/strata"
[ -x "$strata" ] || cargo build -q --workspace --bins
"$strata" gen tpch --sf 0.01 --parquet-only --parquet "$tmp/pq"
python3 scripts/test_tpch_check.py "$tmp/pq"
