#!/usr/bin/env bash
# Every fuzz target for longer than CI runs it: the same property tests with
# CASES cases each (default 20000) instead of the bounded counts in the tests.
# A failure prints the shrunk input and saves it under the test's
# `*.proptest-regressions` file, which CI then replays on every run.
# Usage: scripts/fuzz.sh [CASES]
set -euo pipefail
cases=${1:-20000}
export PROPTEST_CASES=$cases
targets=(
  "strata-storage --test integration fuzz_catalog::"
  "strata-storage --test integration fuzz_pages::"
  "strata-storage --test integration fuzz_wal::"
  "strata-storage --test integration hot_model::"
  "strata-storage --test integration encoding_model::"
  "strata-access --test integration fuzz_predicate::"
  "strata-access --test integration page_order::"
  "strata-access --test integration paths::"
  "strata-access --test integration flash_sorts::"
  "strata-load --test integration fuzz::"
  "strata-sql --test integration fuzz_sql::"
  "strata-server --test integration fuzz::"
)
for t in "${targets[@]}"; do
  echo "== $t ($cases cases)"
  # shellcheck disable=SC2086
  cargo test --release -p $t
done
# The differential SQL tester (issue 53): strata against DuckDB for Python
# (python3 -m pip install duckdb==1.4.4), 100,000 generated statements.
echo "== strata-difftest (100000 statements)"
cargo run --release -p strata-difftest -- --seed "${DIFFTEST_SEED:-53}" --statements 100000 --out results/difftest/fuzz --quiet
