#!/usr/bin/env python3
"""Writes results/smooth-scan/elastic-tunables.md from the points that
scripts/elastic_tunables.sh measured (elastic-tunables.csv) and, for the
modeled devices, the best of full/index/sort scan at each selectivity from the
same table's Fig. 15b sweep (15b.csv).

Usage: scripts/elastic_tunables_report.py [RESULTS_DIR]   (default results/smooth-scan)
"""
import csv
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

INTRO = """# Elastic's tunables, measured

The paper's Elastic policy doubles the region when the local page selectivity of the
last batch is at least `grow` x the global one and divides it by `shrink` when it is
below `shrink_below` x the global one (between the two it keeps the size). The
authors' prototype used grow 1.4 and shrink 4; the paper's text describes grow 1,
shrink 2, shrink-below 1 (strata's default for `--policy elastic`).

Commands (10M-row micro-benchmark, buffer pool 64 MiB, eager trigger, regions read as
deep as the device serves; modeled devices give deterministic modeled time, the real
device the median wall time of 3 cold runs with the full and sort scans measured in
the same run, point by point):

```sh
scripts/elastic_tunables.sh /work/bench.db hdd "1:2:1 1.4:4:1 1.4:2:1 1:2:0.5 1:4:0.5 1:2:0.25 0.8:2:0.5 1:2:0.1 1:2:0.75 1:4:0.75" > hdd.csv
scripts/elastic_tunables.sh /work/bench.db ssd "1:2:1 0.8:2:0.5 1:2:0.25 0.8:2:0.25 1:2:0.5 1:2:0.75 1:4:0.75" > ssd.csv
scripts/elastic_tunables.sh /work/bench.db real "full sort 1:2:1 0.8:2:0.5 1.4:4:1 1:2:0.25 0.8:2:1" > real.csv
cat hdd.csv ssd.csv real.csv > results/smooth-scan/elastic-tunables.csv   # one header line
scripts/elastic_tunables_report.py
```

Raw points: `elastic-tunables.csv`; on hdd and ssd each cell is Elastic's modeled time
over the best of full, index and sort scan at that selectivity (from `15b.csv`).
"""

FINDINGS = """## What the data says

* A grow factor above 1 (the prototype's 1.4) cannot work with page selectivity: a
  page selectivity is at most 1, so once the global one passes 1/grow no region can
  be denser by that factor, the region never grows, and Smooth Scan stays an
  entire-page probe.
* No single setting serves a disk and flash: the setting best on one device is far
  from the best on the other (compare the worst-case columns). Elastic compares the
  data with itself (local against global selectivity) and never with what the device
  charges for a random page against a sequential one, and which way a region should
  go at a given density depends on exactly that ratio.
* So strata's default policy is the cost-aware one (`--policy cost`): Elastic's
  two-way morphing with the break-even density of the device's own costs as the
  yardstick (`PageCosts::break_even_density`); see `15b.md` for it on the same sweep.
"""


def key(x):
    return round(float(x), 6)


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "results/smooth-scan")
    points = list(csv.DictReader(open(out / "elastic-tunables.csv")))
    best = defaultdict(lambda: float("inf"))
    for r in csv.DictReader(open(out / "15b.csv")):
        if r["figure"] == "15b" and r["variant"] in ("full", "index", "sort"):
            best[(r["device"], key(r["x"]))] = min(
                best[(r["device"], key(r["x"]))], float(r["modeled_ms"]))
    time_col = [c for c in points[0] if c.endswith("_ms")][0]
    baselines = defaultdict(dict)
    for r in points:
        if r["grow"] in ("full", "sort"):
            baselines[(r["device"], r["grow"])][key(r["selectivity_pct"])] = float(r[time_col])
    text = [INTRO]
    for device in dict.fromkeys(r["device"] for r in points):
        rows = defaultdict(dict)
        sels = []
        for r in points:
            if r["device"] != device or r["grow"] in ("full", "sort"):
                continue
            s = key(r["selectivity_pct"])
            if s not in sels:
                sels.append(s)
            if device == "real":
                ref = min(baselines[(device, p)][s] for p in ("full", "sort"))
            else:
                ref = best[(device, s)]
            rows[(float(r["grow"]), float(r["shrink"]), float(r["shrink_below"]))][s] = float(r[time_col]) / ref
        what = ("wall time over the best of full and sort scan (cold, median of 3)"
                if device == "real" else "time over the best of full/index/sort (modeled)")
        text.append(f"\n## {device}: Elastic's {what}\n\n")
        text.append("| grow | shrink | shrink below | " + " | ".join(f"{s:g}%" for s in sels) + " | worst |\n")
        text.append("| ---: " * (len(sels) + 4) + "|\n")
        for (g, sh, b), by in sorted(rows.items()):
            worst = max(by.values())
            cells = " | ".join(f"{by[s]:.2f}" for s in sels)
            text.append(f"| {g:g} | {sh:g} | {b:g} | {cells} | **{worst:.2f}** |\n")
        if device == "real":
            for p in ("full", "sort"):
                cells = " | ".join(f"{baselines[(device, p)][s]:.0f}" for s in sels)
                text.append(f"| {p} scan (ms) | | | {cells} | |\n")
        top = min(rows.items(), key=lambda kv: max(kv[1].values()))
        text.append(f"\nBest worst case on {device}: grow {top[0][0]:g}, shrink {top[0][1]:g}, "
                    f"shrink below {top[0][2]:g} at {max(top[1].values()):.2f}x.\n")
    text.append("\n" + FINDINGS)
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    text.append(f"\n---\nMade by `scripts/elastic_tunables_report.py {out}` at commit `{commit}`"
                " from the points in `elastic-tunables.csv`.\n")
    (out / "elastic-tunables.md").write_text("".join(text))


if __name__ == "__main__":
    main()
