#!/usr/bin/env bash
# The encoding-waste and unused-space report (`strata waste`) of every table of
# a database, as markdown with the command and commit that made it, plus one
# plot per table. It is the "before" of types as hints (No Bits Left Behind
# §4.1): what each column's values need against what their declared types take.
# Usage: scripts/waste_report.sh DB OUT_DIR   (strata from target/debug unless STRATA is set)
set -euo pipefail
db=$1 out=$2
strata=${STRATA:-$(dirname "$0")/../target/debug/strata}
mkdir -p "$out"
commit=$(git -C "$(dirname "$0")" rev-parse --short HEAD)
git -C "$(dirname "$0")" diff --quiet HEAD -- crates || commit="$commit-dirty"
{
  echo "# Unused space and encoding waste: $(basename "$db")"
  echo
  echo "Made by \`scripts/waste_report.sh $db $out\` (\`strata --db $db waste --plot $out/waste\`) at commit \`$commit\`."
  echo
  echo "Stored: the bytes the non-NULL values take in their declared types. Tightest type: the narrowest SQL type"
  echo "holding every value. Cheapest encoding: the smallest of narrow or frame-of-reference integers, FLOAT32,"
  echo "dictionary codes (up to 65,536 distinct values, the dictionary counted) and trimmed strings. Wasted: stored"
  echo "minus the cheapest encoding's bytes, with its share of the heap file."
  echo
  echo '```'
  "$strata" --db "$db" waste --plot "$out/waste"
  echo '```'
} > "$out/waste.md"
"$strata" --db "$db" waste --json > "$out/waste.json"
echo "wrote $out/waste.md"
