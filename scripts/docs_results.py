#!/usr/bin/env python3
"""Render the measured results in docs/ from the files under results/, and check the docs.

The measured numbers on the paper pages (docs/smooth-scan.md, docs/skipper.md, ...)
are not typed by hand: each page holds blocks

    <!-- results:NAME begin -->
    ... generated ...
    <!-- end -->

and this script rewrites what is between the markers from the results files that
BLOCKS names for NAME: the summary's title and the command that made it (taken
from the file itself), chosen markdown tables or sections of the benches' own
summaries (`results/**/*.md`), and tables computed here from their CSV and JSON.

    python3 scripts/docs_results.py            # rewrite every block in place
    python3 scripts/docs_results.py --check    # fail if a block is stale, a block
                                               # is unknown, or a relative link in
                                               # README.md or docs/ points nowhere

Plain python3, standard library only.
"""

import csv
import json
import os
import re
import sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")

# --------------------------------------------------------------------------
# What each block shows. An entry is (results file, what to take from it):
#   tables=[i, ...]       the i-th markdown tables of a .md summary (0-based)
#   sections=["title"]    whole "## title" sections of a .md summary
#   lines=r"regex"        single lines of a .md summary matching the regex
#   max_rows=N            cut each taken table after N rows
#   sweep=True            (a .csv) Smooth Scan against the best of full/index/sort
#   difftest=True         (a .json) the differential tester's totals
# --------------------------------------------------------------------------


def E(path, **what):
    return (path, what)


BLOCKS = {
    "smooth-scan-sweeps": [
        E("results/smooth-scan/15b.csv", sweep=True),
        E("results/smooth-scan/15b-modeled/15b.csv", sweep=True),
        E("results/smooth-scan/15a.csv", sweep=True),
        E("results/smooth-scan/15a-real/15a.csv", sweep=True),
        E("results/smooth-scan/23.csv", sweep=True),
    ],
    "columns-robustness": [
        E("results/smooth-scan/robustness-columns/robustness.md", tables=[0, 3]),
        E("results/smooth-scan/robustness-columns-real/robustness.md", tables=[0]),
        E("results/smooth-scan/robustness-columns-10m/robustness.md", tables=[0, 3]),
    ],
    "smooth-scan-robustness": [
        E("results/smooth-scan/robustness.md", tables=[0, 2, 4]),
        E("results/smooth-scan/robustness-10m/robustness.md", tables=[0, 2]),
        E("results/smooth-scan/robustness-10m-real/robustness.md", tables=[0]),
        E("results/smooth-scan/robustness-10m-25-real/robustness.md", tables=[0]),
    ],
    "smooth-scan-figures": [
        E(f"results/smooth-scan/{n}.md", lines=r"^(Command|Made by)") for n in
        ["16", "17", "18", "19", "20", "21", "22"]
    ] + [
        E("results/smooth-scan/elastic-tunables.md", tables=[0]),
        E("results/smooth-scan/fig24.md", lines=r"^(Command|Made by)"),
        E("results/smooth-scan/postgres.md", tables=[0]),
        E("results/smooth-scan/wal-before-after-15b/compare.md", lines=r"^(Command|Made by|Total|total|Median|median)"),
    ],
    "flash": [
        E("results/flash/2.md", tables=[0]),
        E("results/flash/5.md", lines=r"^(Command|Made by)"),
        E("results/flash/6.md", tables=[0]),
        E("results/flash/table2.md", sections=["Against the paper"]),
    ],
    "nblb-index-cache": [
        E("results/index-cache/2a.md", lines=r"^(Command|Made by)"),
        E("results/index-cache/fill.md", tables=[0]),
        E("results/index-cache/2c.md", tables=[0]),
        E("results/index-cache/2b.md", sections=["Against the issue's targets"]),
        E("results/index-cache/wiki-1000000.md", tables=[0]),
    ],
    "nblb-clustering": [
        E("results/waste/fig3/fig3.md", sections=["Against the paper"]),
        E("results/waste/rows-10000000/fig3/fig3.md", sections=["Against the paper"]),
        E("results/waste/counting/counting.md", tables=[0]),
    ],
    "nblb-encoding": [
        E("results/waste/encoding/encoding.md", tables=[0, 1]),
        E("results/waste/ids/ids.md", tables=[0]),
        E("results/waste/split/split.md", tables=[0]),
        E("results/waste/rows-10000000/split/split.md", tables=[0]),
    ],
    "skipper": [
        E("results/csd/pull.md", tables=[0]),
        E("results/csd/pull-model.md", lines=r"^(Command|Made by)"),
        E("results/csd/schedulers.md", lines=r"^(Command|Made by)"),
        E("results/skipper/fig7.md", tables=[0], lines=r"^- "),
        E("results/skipper/fig8.md", tables=[0], lines=r"^- "),
        E("results/skipper/fig9.md", lines=r"^(- |Command|Made by)"),
        E("results/skipper/fig10.md", tables=[0], lines=r"^- "),
        E("results/skipper/fig11a.md", tables=[0], lines=r"^- "),
        E("results/skipper/fig11b.md", tables=[0], lines=r"^- "),
        E("results/skipper/fig12.md", tables=[0], lines=r"^- "),
    ],
    "skipper-columns": [
        E("results/skipper/cold-columns/README.md", tables=[0], lines=r"^(Made by|All 22|On the device)"),
    ],
    "tpch": [
        E("results/tpch/tpch.md", sections=["Fig. 1: what stale statistics cost"]),
        E("results/tpch/page-order/tpch.md", tables=[0]),
        E("results/tpch/all22/tpch.md", lines=r"^(Command|Made by)"),
        E("results/tpch/fig14.md", tables=[0]),
        E("results/tpch/wal-before-after/compare.md", lines=r"^(Command|Made by|Total|total)"),
    ],
    "tpch-engines": [
        E("results/tpch/engines/engines.md", tables=[0, 1], lines=r"^(Made by|Scale factor|Bytes read|PostgreSQL over|PostgreSQL runs cancelled)"),
    ],
    "tpch-engines-sf10": [
        E("results/tpch/engines-sf10/engines.md", tables=[0], lines=r"^(Made by|Scale factor|Bytes read)"),
        E("results/tpch/engines-sf10-pool4g/engines.md", tables=[0, 1], lines=r"^(Made by|Bytes read)"),
    ],
    "column-lookups": [
        E("results/tpch/lookups/lookups.md", tables=[0], lines=r"^(Made by|TPC-H SF)"),
    ],
    "storage-io": [
        E("results/storage/io.md", tables=[0], lines=r"^(Sequential|Random)"),
    ],
    "writes": [
        E("results/writes/writes.md", tables=[0]),
    ],
    "python-bench": [
        E("results/python/python.md", tables=[0, 1], lines=r"^(Made by|Table:|Peak RSS)"),
    ],
    "serve-pgbench": [
        E("results/serve/pgbench.md", tables=[0], lines=r"^(Made by|pgbench)"),
    ],
    "serve-mixed": [
        E("results/serve/mixed.md", tables=[0], lines=r"^(Made by|Target|- `--device)"),
    ],
    "serve-lookup-tails": [
        E("results/serve/lookup-tails/lookup-tails.md", tables=[0, 1], lines=r"^Made by"),
    ],
    "serve-crash": [
        E("results/serve/crash.md", lines=r"^(Made by|\d+ kills)"),
    ],
    "difftest": [
        E("results/difftest/summary.json", difftest=True),
    ],
}

BEGIN = re.compile(r"^<!-- results:([A-Za-z0-9_.-]+) begin -->\s*$")
END = "<!-- end -->"
COMMIT = re.compile(r"\s*at commit `?[0-9a-f]{7,40}`?")


# The directory of the page being rewritten: links in its blocks are relative
# to it (docs/ or docs/layers/).
PAGE_DIR = [DOCS]


def rel(path):
    return os.path.relpath(os.path.join(ROOT, path), PAGE_DIR[0])


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def md_title(text, path):
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return os.path.basename(path)


def md_tables(lines):
    tables, cur = [], []
    for line in lines:
        if line.startswith("|"):
            cur.append(line)
        elif cur:
            tables.append(cur)
            cur = []
    if cur:
        tables.append(cur)
    return tables


def md_sections(lines):
    out, name = defaultdict(list), None
    for line in lines:
        if line.startswith("## "):
            name = line[3:].strip()
            continue
        if line.startswith("# ") or line.strip() == "---":
            name = None
            continue
        if name is not None:
            out[name].append(line)
    return out


def fix_links(line, src):
    """A results summary links its plots relative to itself; point them from docs/."""
    base = os.path.dirname(src)

    def sub(m):
        target = m.group(2)
        if re.match(r"^[a-z]+:|^#|^/", target):
            return m.group(0)
        return f"{m.group(1)}({rel(os.path.join(base, target))})"

    return re.sub(r"(!?\[[^\]]*\])\(([^)\s]+)\)", sub, line)


def command_of(text):
    """The command line a summary names (its `Command:` or `Made by` line), without the commit."""
    for line in text.splitlines():
        m = re.search(r"(?:Command|Made by):?\s*`([^`]+)`", line)
        if m:
            return m.group(1)
    return None


def render_md(path, what):
    text = read(path)
    lines = text.splitlines()
    out = [f"**{md_title(text, path)}** ([{os.path.basename(path)}]({rel(path)}))", ""]
    cmd = command_of(text)
    if cmd:
        out += [f"Made by `{cmd}`.", ""]
    if "lines" in what:
        pat = re.compile(what["lines"])
        picked = [COMMIT.sub("", l) for l in lines if pat.search(l)
                  and not re.match(r"^(Command|Made by)", l)]
        if picked:
            out += [fix_links(l, path) for l in picked] + [""]
    tables = md_tables(lines)
    for i in what.get("tables", []):
        if i >= len(tables):
            raise SystemExit(f"{path}: has {len(tables)} tables, BLOCKS asks for table {i}")
        t = tables[i]
        limit = what.get("max_rows")
        if limit and len(t) > limit + 2:
            t = t[: limit + 2] + [f"| … ({len(tables[i]) - 2 - limit} more rows in the file) |"]
        out += [fix_links(l, path) for l in t] + [""]
    secs = md_sections(lines)
    for name in what.get("sections", []):
        if name not in secs:
            raise SystemExit(f"{path}: no section '## {name}'")
        body = [l for l in secs[name] if not l.startswith("![")]
        while body and not body[0].strip():
            body.pop(0)
        while body and not body[-1].strip():
            body.pop()
        out += [fix_links(COMMIT.sub("", l), path) for l in body] + [""]
    return out


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def render_sweep(path, what):
    """Smooth Scan against the best of the fixed paths, per device and Smooth Scan variant."""
    rows = list(csv.DictReader(read(path).splitlines()))
    fig = rows[0]["figure"] if rows else "?"
    fixed = {"full", "index", "sort"}
    # time per (device, x, variant): modeled time on a modeled device, wall time on the real one
    by = defaultdict(dict)
    for r in rows:
        t = num(r["modeled_ms"]) if r["device"] != "real" else num(r["wall_ms"])
        if t is None or t <= 0:
            t = num(r["wall_ms"])
        by[(r["device"], float(r["x"]))][r["variant"]] = t
    out = [f"**Fig. {fig}: Smooth Scan / best of full, index and sort** "
           f"(computed from [{os.path.relpath(path, 'results')}]({rel(path)}); "
           "modeled ms on hdd/ssd, wall ms on real)", "",
           "| device | variant | worst ratio | at selectivity % | ratio to full scan at 100% |",
           "| --- | --- | ---: | ---: | ---: |"]
    devices = sorted({d for d, _ in by})
    variants = sorted({v for pts in by.values() for v in pts if v not in fixed})
    for d in devices:
        for v in variants:
            worst, at, at_full = None, None, None
            for (dev, x), pts in sorted(by.items()):
                if dev != d or v not in pts:
                    continue
                best = min((pts[p] for p in fixed if p in pts), default=None)
                if not best:
                    continue
                ratio = pts[v] / best
                if worst is None or ratio > worst:
                    worst, at = ratio, x
                if x == 100 and pts.get("full"):
                    at_full = pts[v] / pts["full"]
            if worst is None:
                continue
            full = f"{at_full:.2f}x" if at_full is not None else "—"
            out.append(f"| {d} | {v} | {worst:.2f}x | {at:g} | {full} |")
    return out + [""]


def render_difftest(path, what):
    d = json.loads(read(path))
    out = [f"**Differential SQL tester** ([{os.path.basename(path)}]({rel(path)}))", ""]
    if d.get("command"):
        out += [f"Made by `{d['command']}`.", ""]
    totals = d.get("totals", {})
    if totals:
        out += ["| measure | count |", "| --- | ---: |"]
        for k, v in totals.items():
            if not isinstance(v, (dict, list)):
                out.append(f"| {k.replace('_', ' ')} | {v} |")
        out.append("")
    return out


def render_block(name):
    if name not in BLOCKS:
        raise KeyError(name)
    out = [f"<!-- Generated by scripts/docs_results.py from results/; edit BLOCKS there, not this text. -->", ""]
    for path, what in BLOCKS[name]:
        if not os.path.exists(os.path.join(ROOT, path)):
            raise SystemExit(f"block {name}: {path} does not exist")
        if what.get("sweep"):
            out += render_sweep(path, what)
        elif what.get("difftest"):
            out += render_difftest(path, what)
        else:
            out += render_md(path, what)
    while out and not out[-1].strip():
        out.pop()
    return out


def doc_files():
    files = [os.path.join(ROOT, "README.md")]
    for dirpath, _, names in os.walk(DOCS):
        files += [os.path.join(dirpath, n) for n in sorted(names) if n.endswith(".md")]
    return sorted(files)


def regenerate(text, path, problems):
    PAGE_DIR[0] = os.path.dirname(os.path.join(ROOT, path))
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        m = BEGIN.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        name = m.group(1)
        j = i + 1
        while j < len(lines) and lines[j].strip() != END:
            j += 1
        if j == len(lines):
            problems.append(f"{path}:{i + 1}: block {name} has no {END}")
            return text
        try:
            body = render_block(name)
        except KeyError:
            problems.append(f"{path}:{i + 1}: unknown results block '{name}'")
            body = lines[i + 1:j]
        out += [lines[i]] + body + [lines[j]]
        i = j + 1
    return "\n".join(out)


LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def check_links(path, text, problems):
    in_code = False
    for n, line in enumerate(text.split("\n"), 1):
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue
            file_part = target.split("#", 1)[0]
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
            if not os.path.exists(resolved):
                problems.append(f"{os.path.relpath(path, ROOT)}:{n}: link to {target}: no such file")


def main(argv):
    check = "--check" in argv
    problems, stale = [], []
    for path in doc_files():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        new = regenerate(text, os.path.relpath(path, ROOT), problems)
        if new != text:
            if check:
                stale.append(os.path.relpath(path, ROOT))
            else:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(new)
                print(f"rewrote {os.path.relpath(path, ROOT)}")
        check_links(path, new, problems)
    for s in stale:
        problems.append(f"{s}: results blocks are stale; run python3 scripts/docs_results.py")
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        return 1
    if check:
        print(f"docs ok: {len(doc_files())} pages, results blocks current, relative links resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
