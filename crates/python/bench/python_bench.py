#!/usr/bin/env python3
"""strata from Python beside DuckDB's Python API, on the same Parquet-loaded
table, and the memory an Arrow result costs.

    strata bench python --work-dir /tmp/pybench [--rows 10000000] [--runs 3] [--out results/python]
    (or: python3 crates/python/bench/python_bench.py ...)

Needs the strata package (pip install ./crates/python), pyarrow and DuckDB.

The table: `--rows` rows of 4 columns (id BIGINT, qty BIGINT, price DOUBLE,
day INT; 28 bytes a row in Arrow), written once to Parquet with a fixed seed
and loaded from that file into a strata database (`con.load`) and a DuckDB
database (`CREATE TABLE ... AS SELECT * FROM read_parquet`).

Memory (a fresh process per run): RSS after `strata.connect` and after the
query, then the process's peak RSS (VmHWM) once `.arrow()` has made the
pyarrow Table, beside the Table's own bytes (`Table.nbytes`). The issue's
target: peak RSS growth over the connected process <= 1.5x the Arrow data,
and no growth from `.arrow()` itself (the buffers are handed over, not
copied).

Throughput: a full-table `.arrow()` and an aggregate, per engine, cold and
warm, medians of `--runs`, the engines interleaved in one run. Cold: a fresh
process, after `posix_fadvise(DONTNEED)` on the engine's own files (strata
reads with direct I/O, so its buffer pool, new in each process, is what is
cold; DuckDB reads through the OS cache, which the advice empties for its
file); warm: the same query again in that process. No cache of the machine
is dropped.

Results go to stdout, and with `--out DIR` to DIR/python.md.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

FULL = "SELECT * FROM t"
AGG = "SELECT day, sum(qty * price) AS revenue, count(*) AS n FROM t GROUP BY day"


def make_data(work, rows):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = os.path.join(work, f"t-{rows}.parquet")
    if os.path.exists(path):
        return path
    rng = np.random.default_rng(20261203)
    table = pa.table({
        "id": pa.array(np.arange(rows, dtype=np.int64)),
        "qty": pa.array(rng.integers(1, 50, rows, dtype=np.int64)),
        "price": pa.array(rng.random(rows) * 1000.0),
        "day": pa.array(rng.integers(0, 2500, rows, dtype=np.int32)),
    })
    pq.write_table(table, path + ".tmp", row_group_size=1 << 20)
    os.replace(path + ".tmp", path)
    return path


def load(work, parquet, rows):
    import duckdb

    import strata

    sdb = os.path.join(work, f"strata-{rows}")
    ddb = os.path.join(work, f"duck-{rows}.duckdb")
    if not os.path.exists(os.path.join(sdb, "catalog.json")):
        start = time.perf_counter()
        con = strata.connect(sdb)
        n = con.load("t", parquet)
        con.close()
        print(f"strata: loaded {n} rows in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    if not os.path.exists(ddb):
        start = time.perf_counter()
        con = duckdb.connect(ddb)
        con.execute(f"CREATE TABLE t AS SELECT * FROM read_parquet('{parquet}')")
        con.close()
        print(f"duckdb: loaded in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return sdb, ddb


def evict(path):
    """posix_fadvise(DONTNEED) on every file under path: the OS cache of
    these files only."""
    files = [path] if os.path.isfile(path) else [
        os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs
    ]
    for f in files:
        try:
            fd = os.open(f, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def child(args):
    """One measurement in this (fresh) process; prints one JSON line."""
    import pyarrow as pa  # noqa: F401 - imported before the baseline

    if args.engine == "strata":
        import strata

        evict(args.db)
        con = strata.connect(args.db, read_only=True, buffer_pool=args.buffer_pool)

        def run(q):
            return con.sql(q)
    else:
        import duckdb

        evict(args.db)
        con = duckdb.connect(args.db, read_only=True)

        def run(q):
            return con.sql(q)

    def to_arrow(r):
        t = r.arrow()
        return t.read_all() if hasattr(t, "read_all") else t

    out = {}
    if args.what == "memory":
        base = status("VmRSS")
        r = run(FULL)
        after_query = status("VmRSS")
        pool_before = pa.total_allocated_bytes()
        t = to_arrow(r)
        # Buffers pyarrow allocated itself: a copy of the data would be here.
        pool_added = pa.total_allocated_bytes() - pool_before
        after_arrow = status("VmRSS")
        peak = status("VmHWM")
        out = {
            "base": base,
            "after_query": after_query,
            "after_arrow": after_arrow,
            "peak": peak,
            "arrow_bytes": t.nbytes,
            "rows": t.num_rows,
            "batches": len(t.to_batches()),
            "pool_added": pool_added,
        }
    else:
        q = FULL if args.what == "full" else AGG
        times = []
        for _ in range(2):
            t = None  # the previous run's table is freed first
            start = time.perf_counter()
            t = to_arrow(run(q))
            times.append(time.perf_counter() - start)
            rows = t.num_rows
        out = {"cold": times[0], "warm": times[1], "rows": rows}
    print(json.dumps(out))


def measure(engine, db, what, buffer_pool):
    out = subprocess.run(
        [sys.executable, __file__, "--child", engine, "--db", db, "--what", what,
         "--buffer-pool", buffer_pool],
        capture_output=True, text=True,
    )
    if out.returncode != 0:
        raise SystemExit(f"{engine} {what} failed:\n{out.stdout}{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def commit():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        c = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here,
                           capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=here, capture_output=True, text=True).stdout.strip()
        return c + ("-dirty" if dirty else "")
    except OSError:
        return "unknown"


def mib(b):
    return f"{b / 2**20:.0f}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work-dir", default="/tmp/strata-python-bench")
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--buffer-pool", default="256MiB")
    p.add_argument("--out")
    p.add_argument("--child", choices=["strata", "duckdb"])
    p.add_argument("--db")
    p.add_argument("--what", choices=["memory", "full", "agg"])
    args = p.parse_args()
    if args.child:
        args.engine = args.child
        return child(args)

    import duckdb
    import pyarrow

    import strata

    os.makedirs(args.work_dir, exist_ok=True)
    parquet = make_data(args.work_dir, args.rows)
    sdb, ddb = load(args.work_dir, parquet, args.rows)
    dbs = {"strata": sdb, "duckdb": ddb}

    mem = [measure("strata", sdb, "memory", args.buffer_pool) for _ in range(args.runs)]
    times = {(e, w): [] for e in dbs for w in ("full", "agg")}
    for _ in range(args.runs):
        for w in ("full", "agg"):
            for e in dbs:
                times[(e, w)].append(measure(e, dbs[e], w, args.buffer_pool))

    launcher = os.environ.get("STRATA_BENCH_COMMAND", "python3 crates/python/bench/python_bench.py")
    cmd = " ".join([launcher] + sys.argv[1:])
    lines = [
        "# strata from Python beside DuckDB's Python API",
        "",
        f"Made by `{cmd}` at commit `{commit()}`.",
        "",
        f"Table: {args.rows} rows x 4 columns (BIGINT, BIGINT, DOUBLE, INT), from one Parquet file "
        f"loaded into each engine; strata {strata.__version__} (buffer pool {args.buffer_pool}, direct I/O), "
        f"DuckDB {duckdb.__version__}, pyarrow {pyarrow.__version__}, Python {sys.version.split()[0]}. "
        f"Medians of {args.runs} runs, the engines interleaved, each run a fresh process.",
        "",
        "## Memory of `.arrow()` (strata)",
        "",
        "| | MiB |",
        "| --- | ---: |",
    ]
    med = {k: statistics.median(m[k] for m in mem) for k in mem[0]}
    growth = med["peak"] - med["base"]
    lines += [
        f"| RSS after connect | {mib(med['base'])} |",
        f"| RSS after the query (result held natively) | {mib(med['after_query'])} |",
        f"| RSS after `.arrow()` | {mib(med['after_arrow'])} |",
        f"| peak RSS (VmHWM) | {mib(med['peak'])} |",
        f"| the Arrow table's bytes (`Table.nbytes`) | {mib(med['arrow_bytes'])} |",
        "",
        f"Peak RSS growth over the connected process: {growth / med['arrow_bytes']:.2f}x the Arrow data "
        f"(target <= 1.5x); whole-process peak {med['peak'] / med['arrow_bytes']:.2f}x. "
        f"`.arrow()` itself added {mib(med['after_arrow'] - med['after_query'])} MiB of RSS for "
        f"{med['batches']:.0f} batches; pyarrow's memory pool allocated "
        f"{med['pool_added'] / 2**20:.1f} MiB during it (a copy of the data would be "
        f"{mib(med['arrow_bytes'])} MiB there).",
        "",
        "## Throughput (seconds, medians)",
        "",
        "| query | strata cold | DuckDB cold | strata / DuckDB cold | strata warm | DuckDB warm | strata / DuckDB warm |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for w, label in (("full", "full table `.arrow()`"), ("agg", "aggregate (GROUP BY day)")):
        s = times[("strata", w)]
        d = times[("duckdb", w)]
        sc, dc = statistics.median(x["cold"] for x in s), statistics.median(x["cold"] for x in d)
        sw, dw = statistics.median(x["warm"] for x in s), statistics.median(x["warm"] for x in d)
        lines.append(
            f"| {label} | {sc:.3f} | {dc:.3f} | {sc / dc:.2f} | {sw:.3f} | {dw:.3f} | {sw / dw:.2f} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "python.md"), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
