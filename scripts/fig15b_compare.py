#!/usr/bin/env python3
"""Medians of the before/after Fig. 15b runs written by fig15b_before_after.sh
and their ratio (after / before) per access path and selectivity."""
import csv, statistics, sys
from collections import defaultdict

out, rounds = sys.argv[1], int(sys.argv[2])
times = defaultdict(list)  # (side, variant, x) -> [ms]
for side in ("before", "after"):
    for r in range(1, rounds + 1):
        with open(f"{out}/{side}-{r}/15b.csv") as f:
            for row in csv.DictReader(f):
                if row["device"] == "real" and row["censored"] == "no":
                    times[(side, row["variant"], float(row["x"]))].append(float(row["wall_ms"]))
keys = sorted({(v, x) for (_, v, x) in times})
print("| path | selectivity % | before ms | after ms | after / before |")
print("| --- | ---: | ---: | ---: | ---: |")
ratios, tb, ta = [], 0.0, 0.0
for v, x in keys:
    b, a = times.get(("before", v, x)), times.get(("after", v, x))
    if not b or not a:
        continue
    mb, ma = statistics.median(b), statistics.median(a)
    ratios.append(ma / mb)
    tb, ta = tb + mb, ta + ma
    print(f"| {v} | {x:g} | {mb:.1f} | {ma:.1f} | {ma / mb:.2f} |")
print(f"\nTotal of the medians: before {tb:.0f} ms, after {ta:.0f} ms, ratio {ta / tb:.3f}; "
      f"per path and point {min(ratios):.2f}–{max(ratios):.2f} (median {statistics.median(ratios):.2f}); "
      f"each a median over {rounds} rounds of the per-run medians.")
