#!/usr/bin/env python3
"""DuckDB's side of `strata bench tpch --vs-duckdb`.

  tpch_duckdb.py load DB PARQUET_DIR      make DB (a DuckDB file) from <table>.parquet
  tpch_duckdb.py run DB QUERY_FILE        run the query twice in this fresh process

`run` prints one JSON line: the first (cold when the caller dropped the OS
page cache) and second (warm) run's seconds, the bytes this process read
from storage during the first run (/proc/self/io read_bytes), and the rows.
"""
import json
import sys
import time

import duckdb

TABLES = ["region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem"]


def read_bytes():
    with open("/proc/self/io") as f:
        for line in f:
            if line.startswith("read_bytes:"):
                return int(line.split()[1])
    return 0


def main():
    what, db = sys.argv[1], sys.argv[2]
    if what == "load":
        con = duckdb.connect(db)
        for t in TABLES:
            con.execute(f"CREATE TABLE {t} AS SELECT * FROM read_parquet('{sys.argv[3]}/{t}.parquet')")
        con.execute("CHECKPOINT")
        con.close()
        return
    sql = open(sys.argv[3]).read().strip().rstrip(";")
    con = duckdb.connect(db, read_only=True)
    before = read_bytes()
    t0 = time.perf_counter()
    rows = con.execute(sql).fetchall()
    cold = time.perf_counter() - t0
    read = read_bytes() - before
    t0 = time.perf_counter()
    con.execute(sql).fetchall()
    warm = time.perf_counter() - t0
    print(json.dumps({"cold_s": cold, "warm_s": warm, "read_bytes": read, "rows": len(rows)}))


if __name__ == "__main__":
    main()
