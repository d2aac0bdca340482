#!/usr/bin/env bash
# The README's walk, run literally: every ```sh block of README.md above the line
# `<!-- end of the README walk -->` (the quick start and the first task), in
# order, in one bash with `set -e`, as a newcomer would paste them. The one line
# not run is the test suite's own command (`bash scripts/test`), which runs this
# script.
#
# The blocks run in a scratch directory inside the checkout's target/
# (target/readme-walk, made afresh), where `target` links back to the
# checkout's target/: cargo finds the workspace from there, so the build the
# README asks for is the checkout's own build and reuses what is built (a copy
# of the checkout elsewhere would be another workspace, compiled again), and
# what the blocks create (databases, CSV files) stays out of the checkout. A
# failing command fails the walk and names the block.
#
#   bash scripts/readme_walk.sh            # from anywhere
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scratch="$root/target/readme-walk"
rm -rf "$scratch"
mkdir -p "$scratch"
ln -s .. "$scratch/target"

# The blocks, numbered, with their first line in the README.
python3 - "$root/README.md" "$scratch/walk.sh" <<'PY'
import re, sys
readme, out = sys.argv[1], sys.argv[2]
lines = open(readme, encoding="utf-8").read().split("\n")
script = ["set -euo pipefail", "cd \"$(dirname \"$0\")\""]
inside, n = False, 0
for i, line in enumerate(lines, 1):
    if line.strip() == "<!-- end of the README walk -->":
        break
    if not inside and re.match(r"^```(sh|bash)\s*$", line):
        inside, n = True, n + 1
        script.append(f"echo '--- README block {n} (line {i})' >&2")
        continue
    if inside and line.startswith("```"):
        inside = False
        continue
    if inside:
        if re.match(r"^\s*bash scripts/test(\s|$)", line):
            script.append(f"# (not run: the test suite's own command) {line}")
            continue
        script.append(line)
if n == 0:
    sys.exit("README.md has no ```sh block above <!-- end of the README walk -->")
open(out, "w", encoding="utf-8").write("\n".join(script) + "\n")
PY

echo "README walk: $(grep -c '^echo .--- README block' "$scratch/walk.sh") block(s), in $scratch" >&2
if ! (cd "$scratch" && bash walk.sh); then
    echo "README walk failed: the last '--- README block' above names the block" >&2
    exit 1
fi
echo "README walk passed" >&2
