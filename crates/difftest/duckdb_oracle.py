"""The second engine of strata's differential SQL tester (crates/difftest).

One process per run. It reads JSON lines on stdin and answers each with one
JSON line on stdout:

  {"sql": "..."}     -> {"ok": true, "columns": [...], "types": [...], "rows": [[...], ...]}
                        or {"error": "..."}
  {"reset": true}    -> {"ok": true}   (a fresh in-memory database)

Values are canonical text (NULL is null): integers in decimal, floats as
Python's repr, decimals in plain notation with their scale, dates as
YYYY-MM-DD, booleans as true/false. The first line it writes names the
DuckDB version, or says what to install.
"""

import datetime
import decimal
import json
import sys

PINNED = "1.4.4"

try:
    import duckdb
except ImportError:
    print(json.dumps({"fatal": f"DuckDB for Python is missing: python3 -m pip install duckdb=={PINNED}"}), flush=True)
    sys.exit(1)

if duckdb.__version__ != PINNED:
    print(json.dumps({"fatal": f"DuckDB {duckdb.__version__} found, the tester is pinned to {PINNED}: python3 -m pip install duckdb=={PINNED}"}), flush=True)
    sys.exit(1)


def canon(v):
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    if isinstance(v, (datetime.date, datetime.datetime)):
        return v.isoformat()
    return str(v)


def connect():
    con = duckdb.connect()
    # One thread: answers do not depend on it, and the machine is shared.
    con.execute("SET threads = 1")
    return con


def main():
    con = connect()
    print(json.dumps({"ready": duckdb.__version__}), flush=True)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        req = json.loads(line)
        if req.get("reset"):
            con.close()
            con = connect()
            out = {"ok": True}
        else:
            try:
                cur = con.execute(req["sql"])
                if cur.description is None:
                    out = {"ok": True, "columns": [], "types": [], "rows": []}
                else:
                    rows = cur.fetchall()
                    out = {
                        "ok": True,
                        "columns": [d[0] for d in cur.description],
                        "types": [str(d[1]) for d in cur.description],
                        "rows": [[canon(v) for v in r] for r in rows],
                    }
            except Exception as e:  # every DuckDB error is an answer: "it refused"
                out = {"error": f"{type(e).__name__}: {e}".splitlines()[0]}
        print(json.dumps(out), flush=True)


main()
