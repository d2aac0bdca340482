#!/usr/bin/env python3
"""Merge the reports of strata-difftest runs into results/difftest/.

Usage: scripts/difftest_summary.py --command CMD --commit SHA --out DIR RUN_DIR...

Each RUN_DIR is a `strata-difftest --out` directory (report.json,
repros.md). Writes DIR/summary.json (totals summed over the runs, every class
with its executions and statements, the query families, and each run's seed
and time), DIR/summary.md (the same as tables) and DIR/repros-seed<N>.md (the
first reproductions of each class, as the tester wrote them).
"""

import argparse
import json
import os
import shutil

TOTALS = ["statements", "queries", "dml", "tlp_cases", "tlp_agreed", "tlp_refused",
          "executions", "agreements", "both_refused", "explained", "unexplained",
          "panics", "rounds"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--command", required=True)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("runs", nargs="+")
    a = ap.parse_args()
    totals = {k: 0 for k in TOTALS}
    classes, families, runs = {}, {}, []
    duckdb = None
    os.makedirs(a.out, exist_ok=True)
    for d in a.runs:
        r = json.load(open(os.path.join(d, "report.json")))
        duckdb = r.get("duckdb", duckdb)
        for k in TOTALS:
            totals[k] += r.get(k, 0)
        for f, n in r.get("families", {}).items():
            families[f] = families.get(f, 0) + n
        for c in r.get("classes", []):
            e = classes.setdefault(c["name"], {"label": c["label"], "reason": c["reason"],
                                               "executions": 0, "statements": 0})
            e["executions"] += c["executions"]
            e["statements"] += c["statements"]
        runs.append({"seed": r["seed"], "statements": r["statements"],
                     "elapsed_s": round(r["elapsed_s"])})
        shutil.copy(os.path.join(d, "repros.md"),
                    os.path.join(a.out, f"repros-seed{r['seed']}.md"))
    summary = {"command": a.command, "commit": a.commit, "duckdb": duckdb, "totals": totals,
               "classes": dict(sorted(classes.items())), "families": dict(sorted(families.items())),
               "runs": runs}
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, ensure_ascii=False)
        f.write("\n")
    md = [f"# Differential SQL tester: {totals['statements']:,}-statement run", "",
          f"* command: `{a.command}`", f"* commit: `{a.commit}`",
          f"* DuckDB: {duckdb}; runs: " + "; ".join(
              f"seed {r['seed']}, {r['statements']:,} statements, {r['elapsed_s']} s" for r in runs), "",
          "| count | value |", "| --- | --- |"]
    md += [f"| {k} | {v} |" for k, v in totals.items()]
    md += ["", "Query families: " + "; ".join(f"{k} {v}" for k, v in sorted(families.items())), "",
           "| class | label | strata executions | statements |", "| --- | --- | --- | --- |"]
    md += [f"| {n} | {c['label']} | {c['executions']} | {c['statements']} |"
           for n, c in sorted(classes.items())]
    md += ["", "Reasons of the classes: docs/sql-differences.md; reproductions: "
           "repros-seed*.md next to this file.", ""]
    with open(os.path.join(a.out, "summary.md"), "w") as f:
        f.write("\n".join(md))


if __name__ == "__main__":
    main()
