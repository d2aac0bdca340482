#!/usr/bin/env python3
"""Non-test lines of every Rust source file of the workspace, and the files
over the limit.

A file's non-test lines are its lines before its `#[cfg(test)]` module (the
whole file when it has none). Files under a crate's `tests/` directory are
test code and not counted; `src/`, `examples/` and `benches/` are.

Usage: scripts/file_sizes.py [--max N] [--top K] [ROOT]
Prints the K largest files (default 10) and every file over N lines (default
1000); exit status 1 when any file is over N, so CI can hold the line.
"""

import argparse
import os
import re
import sys

TEST_MODULE = re.compile(r"^#\[cfg\(test\)\]\s*\n\s*(pub(\([a-z]+\))?\s+)?mod\s+\w+\s*[{;]", re.M)


def non_test_lines(text):
    m = TEST_MODULE.search(text)
    return text[: m.start()].count("\n") if m else text.count("\n")


def sources(root):
    crates = os.path.join(root, "crates")
    for krate in sorted(os.listdir(crates)):
        base = os.path.join(crates, krate)
        if not os.path.isdir(base):
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            rel = os.path.relpath(dirpath, base).split(os.sep)
            if rel[0] in ("tests", "target"):
                dirnames[:] = []
                continue
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith(".rs"):
                    yield os.path.join(dirpath, name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max", type=int, default=1000)
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("root", nargs="?", default=os.path.join(os.path.dirname(__file__), ".."))
    a = ap.parse_args()
    sizes = []
    for path in sources(a.root):
        with open(path, encoding="utf-8") as f:
            sizes.append((non_test_lines(f.read()), os.path.relpath(path, a.root)))
    sizes.sort(key=lambda s: (-s[0], s[1]))
    print(f"{len(sizes)} source files; the largest (non-test lines):")
    for n, path in sizes[: a.top]:
        print(f"{n:6}  {path}")
    over = [(n, p) for n, p in sizes if n > a.max]
    for n, path in over:
        print(f"{path}: {n} non-test lines, over {a.max}: split it by idea", file=sys.stderr)
    print(f"{len(over)} file(s) over {a.max} lines")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
