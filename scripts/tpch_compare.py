#!/usr/bin/env python3
"""Medians of the before/after TPC-H runs written by tpch_before_after.sh, and
their ratio (after / before) per query and access path."""
import csv, statistics, sys
from collections import defaultdict

out, rounds = sys.argv[1], int(sys.argv[2])
times = defaultdict(list)  # (side, query, variant) -> [ms]
for side in ("before", "after"):
    for r in range(1, rounds + 1):
        with open(f"{out}/{side}-{r}/tpch.csv") as f:
            for row in csv.DictReader(f):
                if row["censored"] == "no":
                    times[(side, row["query"], row["variant"])].append(float(row["wall_ms"]))
keys = sorted({(q, v) for (_, q, v) in times})
print("| query | path | before ms | after ms | after / before |")
print("| --- | --- | ---: | ---: | ---: |")
ratios = []
for q, v in keys:
    b, a = times.get(("before", q, v)), times.get(("after", q, v))
    if not b or not a:
        continue
    mb, ma = statistics.median(b), statistics.median(a)
    ratios.append(ma / mb)
    print(f"| {q} | {v} | {mb:.0f} | {ma:.0f} | {ma / mb:.2f} |")
tb = sum(statistics.median(times[("before", q, v)]) for q, v in keys if times.get(("after", q, v)))
ta = sum(statistics.median(times[("after", q, v)]) for q, v in keys if times.get(("before", q, v)))
print(f"\nTotal of the medians: before {tb:.0f} ms, after {ta:.0f} ms, ratio {ta / tb:.3f}; "
      f"per query and path {min(ratios):.2f}–{max(ratios):.2f} (median {statistics.median(ratios):.2f}), "
      f"medians of {rounds} cold runs.")
