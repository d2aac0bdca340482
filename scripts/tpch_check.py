#!/usr/bin/env python3
"""Checks strata's TPC-H answers against DuckDB's on the same data.

    strata gen tpch --sf 0.01 --parquet /tmp/tpch/pq
    python3 scripts/tpch_check.py --parquet /tmp/tpch/pq --queries crates/sql/queries \\
        --results /tmp/tpch/strata            # q01.csv ... q22.csv from strata
    python3 scripts/tpch_check.py --parquet /tmp/tpch/pq --queries crates/sql/queries \\
        --write-expected /tmp/tpch/duckdb     # DuckDB's answers in the same CSV form

DuckDB (pinned in .ci/run: `pip install duckdb==1.4.4`) runs every `qNN.sql` of
`--queries` over views on `<parquet>/<table>.parquet`, the files `strata gen tpch
--parquet` writes from the very batches it loads into strata. Its answers are
compared with strata's CSV files (`strata sql --format csv -f qNN.sql`: a header
row, then one line per row).

What must match, per query:

* the number of columns and their names (case-insensitive, any `table.`
  qualifier dropped), and the number of rows;
* every value, by the precision rules for query validation of the TPC-H
  specification, clause 2.1.3.5:
  (a) singleton column values and COUNT results match exactly (numbers as
      numbers, so 17 equals 17.00; strings exactly, except that trailing spaces
      are dropped, as CHAR(n) pads; dates as YYYY-MM-DD);
  (b) ratios r are within 1% of v when rounded to the nearest 1/100th,
      0.99*v <= round(r,2) <= 1.01*v;
  (c) SUM results are within $100 of v;
  (d) AVG results are within 1% of v when rounded to the nearest 1/100th, as (b).
  Which rule applies to which column is in COLUMN_RULES (by output column name;
  any other column is a singleton value, rule (a)). In (b) and (d) v is also
  rounded to 1/100th first, as the spec's validation output prints it, so a
  value such as 0.0449 compares as 0.04 on both sides.
* the order: where the query ends in ORDER BY, the rows must come in DuckDB's
  order of the ORDER BY keys (compared by the rules above); rows whose keys tie
  may come in any order, so each run of tied rows is compared as a set (both
  sides sorted by all columns). A query without ORDER BY is compared as a set.
  With LIMIT, a tie across the limit could legitimately select different rows;
  TPC-H's validation queries have none at the validation parameters.

Output: one line per query (ok or FAIL with the first differences: query, row,
column, strata value, DuckDB value). Exit 0 when every query matches, 1 when any
differs or a result file is missing, 2 on bad usage (missing files, a query
DuckDB rejects).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import decimal
import re
import sys
import time
from decimal import Decimal
from pathlib import Path

TABLES = ["region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem"]

# Clause 2.1.3.5 rule per output column of the 22 queries: "sum" (c), "avg"
# (d), "ratio" (b), "count" (a). Q12's high/low_line_count are SUMs of 1/0,
# i.e. counts: exact. Q17's avg_yearly is a SUM divided by 7: rule (c).
COLUMN_RULES = {
    # Q1
    "sum_qty": "sum",
    "sum_base_price": "sum",
    "sum_disc_price": "sum",
    "sum_charge": "sum",
    "avg_qty": "avg",
    "avg_price": "avg",
    "avg_disc": "avg",
    "count_order": "count",
    # Q3, Q5, Q6, Q7, Q10, Q19
    "revenue": "sum",
    # Q4
    "order_count": "count",
    # Q8
    "mkt_share": "ratio",
    # Q9
    "sum_profit": "sum",
    # Q11
    "value": "sum",
    # Q12
    "high_line_count": "count",
    "low_line_count": "count",
    # Q13
    "c_count": "count",
    "custdist": "count",
    # Q14
    "promo_revenue": "ratio",
    # Q15
    "total_revenue": "sum",
    # Q16
    "supplier_cnt": "count",
    # Q17
    "avg_yearly": "sum",
    # Q18 (sum(l_quantity))
    # "sum_qty" as in Q1
    # Q21
    "numwait": "count",
    # Q22
    "numcust": "count",
    "totacctbal": "sum",
}

SUM_TOLERANCE = Decimal(100)
RELATIVE_TOLERANCE = Decimal("0.01")
# Differences shown per failing query.
MAX_SHOWN = 5


class UsageError(Exception):
    """Bad input to the script itself (exit 2)."""


# ---------------------------------------------------------------- values


def format_value(v) -> str:
    """DuckDB's Python value as CSV text, the way an arrow CSV writer prints it."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, Decimal):
        return format(v, "f")
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, datetime.datetime):
        return v.isoformat(sep=" ")
    if isinstance(v, datetime.date):
        return v.isoformat()
    return str(v)


def number(text: str) -> Decimal | None:
    """The value as a number, or None when it is not one (strings, dates)."""
    t = text.strip()
    if not t or not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", t):
        return None
    try:
        return Decimal(t)
    except decimal.InvalidOperation:
        return None


def text_value(text: str) -> str:
    """A non-numeric value as compared: trailing CHAR padding dropped, a
    midnight timestamp shown as its date."""
    t = text.rstrip(" ")
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}[ T]00:00:00(\.0+)?", t):
        t = t[:10]
    return t


def round2(d: Decimal) -> Decimal:
    return d.quantize(Decimal("0.01"), rounding=decimal.ROUND_HALF_UP)


def values_match(rule: str, strata: str, duck: str) -> bool:
    """Whether a strata value matches DuckDB's under clause 2.1.3.5."""
    a, b = number(strata), number(duck)
    if a is None or b is None:
        return a is None and b is None and text_value(strata) == text_value(duck)
    if rule == "sum":
        return abs(a - b) <= SUM_TOLERANCE
    if rule in ("avg", "ratio"):
        ra, rb = round2(a), round2(b)
        return abs(ra - rb) <= RELATIVE_TOLERANCE * abs(rb) or abs(a - b) <= RELATIVE_TOLERANCE * abs(b)
    return a == b


def sort_key(row: list[str]) -> tuple:
    """Orders rows by all columns: numbers (to 1/100th) before text."""
    key = []
    for cell in row:
        n = number(cell)
        key.append((0, round2(n), "") if n is not None else (1, Decimal(0), text_value(cell)))
    return tuple(key)


# ---------------------------------------------------------------- queries


def strip_comments(sql: str) -> str:
    return re.sub(r"--[^\n]*", " ", sql)


def top_level_split(text: str, sep: str = ",") -> list[str]:
    """Splits on `sep` outside parentheses and quotes."""
    parts, depth, quote, cur = [], 0, None, []
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur))
    return parts


def final_order_by(sql: str) -> str | None:
    """The text of the query's outermost ORDER BY clause (without LIMIT), if any."""
    text = " ".join(strip_comments(sql).split()).lower()
    depth, quote, found = 0, None, None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth == 0 and text.startswith("order by", i) and (i == 0 or not text[i - 1].isalnum()):
            found = i + len("order by")
        i += 1
    if found is None:
        return None
    clause = text[found:]
    clause = re.split(r"\blimit\b|;", clause)[0]
    return clause.strip()


def order_keys(sql: str, names: list[str], query: str) -> list[int] | None:
    """Output column positions of the final ORDER BY, or None without one."""
    clause = final_order_by(sql)
    if clause is None:
        return None
    lower = [n.lower() for n in names]
    keys = []
    for item in top_level_split(clause):
        m = re.fullmatch(r"\s*(.+?)(\s+(asc|desc))?(\s+nulls\s+(first|last))?\s*", item)
        if not m:
            raise UsageError(f"{query}: cannot read ORDER BY item '{item.strip()}'")
        expr = m.group(1).strip()
        if expr.isdigit() and 1 <= int(expr) <= len(names):
            keys.append(int(expr) - 1)
            continue
        bare = expr.split(".")[-1]
        if bare not in lower:
            raise UsageError(
                f"{query}: ORDER BY item '{expr}' is not an output column ({', '.join(names)}); "
                "name or alias it in the select list"
            )
        keys.append(lower.index(bare))
    return keys


def open_duckdb(parquet: Path):
    try:
        import duckdb
    except ImportError as e:
        raise UsageError(f"DuckDB is not installed ({e}): pip install duckdb==1.4.4") from e
    missing = [t for t in TABLES if not (parquet / f"{t}.parquet").is_file()]
    if missing:
        raise UsageError(
            f"{parquet}: no {', '.join(t + '.parquet' for t in missing)} "
            "(write them with `strata gen tpch --sf N --parquet DIR`)"
        )
    con = duckdb.connect()
    for t in TABLES:
        path = str((parquet / f"{t}.parquet").resolve()).replace("'", "''")
        con.execute(f"create view {t} as select * from read_parquet('{path}')")
    return con


def run_duckdb(con, sql: str, query: str) -> tuple[list[str], list[list[str]], float]:
    start = time.perf_counter()
    try:
        cur = con.execute(sql)
        rows = cur.fetchall()
    except Exception as e:  # duckdb.Error and its subclasses
        raise UsageError(f"{query}: DuckDB rejects the query: {e}") from e
    ms = (time.perf_counter() - start) * 1000
    names = [d[0] for d in cur.description]
    return names, [[format_value(v) for v in r] for r in rows], ms


def read_result(path: Path) -> tuple[list[str], list[list[str]]]:
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    if not rows:
        return [], []
    header, body = rows[0], rows[1:]
    if len(header) == 1:
        # A one-column NULL may be written as an empty line, which csv reads as [].
        body = [r if r else [""] for r in body]
    return header, body


def write_result(path: Path, names: list[str], rows: list[list[str]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(names)
        w.writerows(rows)


# ---------------------------------------------------------------- comparison


def compare(
    query: str,
    names: list[str],
    expected: list[list[str]],
    header: list[str],
    actual: list[list[str]],
    keys: list[int] | None,
) -> list[str]:
    """Differences between strata's answer (header, actual) and DuckDB's
    (names, expected); empty when they match."""
    bare = [h.strip().split(".")[-1].lower() for h in header]
    if len(header) != len(names):
        return [
            f"{query}: {len(header)} columns ({', '.join(header)}), DuckDB has {len(names)} "
            f"({', '.join(names)})"
        ]
    if bare != [n.lower() for n in names]:
        return [f"{query}: columns ({', '.join(header)}), DuckDB's are ({', '.join(names)})"]
    rules = [COLUMN_RULES.get(n.lower(), "exact") for n in names]
    bad = [i + 1 for i, r in enumerate(actual) if len(r) != len(names)]
    if bad:
        return [f"{query}: row {bad[0]} has {len(actual[bad[0] - 1])} values, expected {len(names)}"]
    diffs: list[str] = []

    def cell_diffs(row_no: int, got: list[str], want: list[str], note: str = "") -> None:
        for c, (g, w) in enumerate(zip(got, want)):
            if not values_match(rules[c], g, w):
                rule = "" if rules[c] == "exact" else f" ({rules[c]} tolerance)"
                diffs.append(
                    f"{query}: row {row_no}, column {c + 1} ({names[c]}){rule}: "
                    f"strata {g!r}, duckdb {w!r}{note}"
                )

    if len(actual) != len(expected):
        diffs.append(f"{query}: {len(actual)} rows, DuckDB has {len(expected)}")
        # Name the rows one side lacks (both sides sorted, walked together).
        a, e = sorted(actual, key=sort_key), sorted(expected, key=sort_key)
        i = j = 0
        while (i < len(a) or j < len(e)) and len(diffs) <= MAX_SHOWN:
            if j < len(e) and (i >= len(a) or sort_key(e[j]) < sort_key(a[i])):
                row = expected.index(e[j]) + 1
                diffs.append(f"{query}: row {row} of DuckDB's answer is missing: {e[j]}")
                j += 1
            elif i < len(a) and (j >= len(e) or sort_key(a[i]) < sort_key(e[j])):
                row = actual.index(a[i]) + 1
                diffs.append(f"{query}: strata's row {row} is not in DuckDB's answer: {a[i]}")
                i += 1
            else:
                i += 1
                j += 1
        return diffs

    # Runs of rows with equal ORDER BY keys (by DuckDB's answer); without
    # ORDER BY the whole answer is one run.
    if keys is None:
        runs = [(0, len(expected))] if expected else []
    else:
        runs, start = [], 0
        for i in range(1, len(expected) + 1):
            if i == len(expected) or any(
                sort_key([expected[i][k]]) != sort_key([expected[start][k]]) for k in keys
            ):
                runs.append((start, i))
                start = i
        for i, (g, w) in enumerate(zip(actual, expected)):
            for k in keys:
                if not values_match(rules[k], g[k], w[k]):
                    diffs.append(
                        f"{query}: row {i + 1}, column {k + 1} ({names[k]}, an ORDER BY key): "
                        f"strata {g[k]!r}, duckdb {w[k]!r} (rows differ or are out of order)"
                    )
                    break
            if len(diffs) >= MAX_SHOWN:
                return diffs
        if diffs:
            return diffs
    for lo, hi in runs:
        got, want = actual[lo:hi], expected[lo:hi]
        note = ""
        if hi - lo > 1:
            got, want = sorted(got, key=sort_key), sorted(want, key=sort_key)
            if keys is not None:
                note = f" (rows {lo + 1}-{hi} tie on the ORDER BY keys; compared sorted)"
            else:
                note = " (no ORDER BY; compared sorted)"
        for j, (g, w) in enumerate(zip(got, want)):
            cell_diffs(lo + j + 1, g, w, note)
            if len(diffs) >= MAX_SHOWN:
                return diffs
    return diffs


# ---------------------------------------------------------------- main


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--parquet", required=True, type=Path, help="directory of <table>.parquet")
    p.add_argument("--queries", required=True, type=Path, help="directory of q01.sql ... q22.sql")
    p.add_argument("--results", type=Path, help="directory of strata's q01.csv ... q22.csv")
    p.add_argument("--write-expected", type=Path, metavar="DIR", help="write DuckDB's answers here as qNN.csv")
    p.add_argument("--only", help="comma-separated queries to run, e.g. q01,q06")
    a = p.parse_args(argv)
    if a.results is None and a.write_expected is None:
        p.error("give --results DIR (check) and/or --write-expected DIR")
    try:
        queries = sorted(a.queries.glob("q[0-9][0-9].sql"))
        if not queries:
            raise UsageError(f"{a.queries}: no qNN.sql files")
        if a.only:
            wanted = {q.strip().lower() for q in a.only.split(",") if q.strip()}
            unknown = wanted - {q.stem for q in queries}
            if unknown:
                raise UsageError(f"--only: no {', '.join(sorted(unknown))} in {a.queries}")
            queries = [q for q in queries if q.stem in wanted]
        if a.results is not None and not a.results.is_dir():
            raise UsageError(f"--results {a.results}: not a directory")
        con = open_duckdb(a.parquet)
        if a.write_expected is not None:
            a.write_expected.mkdir(parents=True, exist_ok=True)
        failed = 0
        for qf in queries:
            q = qf.stem
            sql = qf.read_text(encoding="utf-8")
            names, expected, ms = run_duckdb(con, sql, q)
            keys = order_keys(sql, names, q)
            if a.write_expected is not None:
                write_result(a.write_expected / f"{q}.csv", names, expected)
            if a.results is None:
                print(f"{q}  wrote    {len(expected):>6} rows  duckdb {ms:8.1f} ms")
                continue
            rf = a.results / f"{q}.csv"
            if not rf.is_file():
                failed += 1
                print(f"{q}  FAIL     no strata result {rf}")
                continue
            header, actual = read_result(rf)
            diffs = compare(q, names, expected, header, actual, keys)
            if diffs:
                failed += 1
                print(f"{q}  FAIL     {len(actual):>6} rows, DuckDB {len(expected)}")
                for d in diffs[:MAX_SHOWN]:
                    print(f"    {d}")
            else:
                order = "ordered" if keys is not None else "as a set"
                print(f"{q}  ok       {len(actual):>6} rows  ({order})  duckdb {ms:8.1f} ms")
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.results is None:
        return 0
    print(f"{len(queries) - failed} of {len(queries)} queries match DuckDB")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
