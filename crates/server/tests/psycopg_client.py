"""psycopg 3 (PyPI, pinned in scripts/test-requirements.txt) against strata serve.

Run by crates/server/tests/psycopg.rs as `python3 psycopg_client.py HOST PORT`:
parameters and results of every strata type (text and binary), prepared
statements, transactions, COPY in and out, server errors as psycopg's
exception classes, and cancel. Prints "all checks passed".
"""

import datetime
import sys
import threading
import time
from decimal import Decimal

import psycopg
from psycopg import errors

host, port = sys.argv[1], int(sys.argv[2])
conninfo = f"host={host} port={port} user=strata dbname=strata"


def check(cond, what):
    if not cond:
        raise AssertionError(what)


with psycopg.connect(conninfo, autocommit=True) as conn:
    conn.execute(
        "CREATE TABLE v (n INT, b BIGINT, f DOUBLE, m DECIMAL(12,2), s VARCHAR(40),"
        " c CHAR(3), d DATE, ts TIMESTAMP, t BOOLEAN)"
    )
    row = (
        -7,
        2**53 + 1,
        0.5,
        Decimal("-1234.50"),
        "quote ' and ; -- and é",
        "ab",
        datetime.date(1998, 12, 1),
        datetime.datetime(2024, 2, 29, 23, 59, 58),
        True,
    )
    conn.execute("INSERT INTO v VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)", row)
    conn.execute("INSERT INTO v VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)", (None,) * 9)
    for binary in (False, True):
        cur = conn.cursor(binary=binary)
        got = cur.execute("SELECT * FROM v WHERE b = %s", (2**53 + 1,)).fetchone()
        check(got[:5] == row[:5], f"binary={binary}: {got} != {row}")
        check(got[5].rstrip() == "ab", f"char: {got[5]!r}")
        check(got[6:] == row[6:], f"binary={binary}: {got[6:]} != {row[6:]}")
        nulls = cur.execute("SELECT * FROM v WHERE b IS NULL").fetchone()
        check(nulls == (None,) * 9, f"nulls: {nulls}")
    # A statement run often is prepared by psycopg (named, server side).
    for i in range(8):
        n = conn.execute("SELECT count(*) FROM v WHERE n < %s", (i,), prepare=True).fetchone()[0]
        check(n == 1, f"prepared run {i}: {n}")

    # Transactions: a block commits, a failing one rolls back.
    conn.execute("CREATE TABLE a (k INT PRIMARY KEY, s VARCHAR(10))")
    with conn.transaction():
        conn.execute("INSERT INTO a VALUES (1, 'one')")
        conn.execute("INSERT INTO a VALUES (2, 'two')")
    try:
        with conn.transaction():
            conn.execute("INSERT INTO a VALUES (3, 'three')")
            conn.execute("INSERT INTO a VALUES (1, 'again')")
        raise AssertionError("a duplicate key was accepted")
    except errors.UniqueViolation:
        pass
    check(conn.execute("SELECT count(*) FROM a").fetchone()[0] == 2, "rolled back block left rows")

    # Server errors as psycopg's classes.
    for sql, cls in [
        ("SELECT * FROM nope", errors.UndefinedTable),
        ("SELECT nope FROM a", errors.UndefinedColumn),
        ("SELEC 1", errors.SyntaxError),
        ("SELECT CAST(9223372036854775807 AS BIGINT) + 1", errors.NumericValueOutOfRange),
        ("INSERT INTO a VALUES (NULL, 'x')", errors.NotNullViolation),
    ]:
        try:
            conn.execute(sql)
            raise AssertionError(f"{sql} did not fail")
        except cls:
            pass

    # COPY in (text rows from Python values) and out.
    with conn.cursor() as cur:
        with cur.copy("COPY a (k, s) FROM STDIN") as copy:
            for k in range(10, 20):
                copy.write_row((k, f"s{k}\t!"))
        check(conn.execute("SELECT count(*) FROM a").fetchone()[0] == 12, "COPY FROM STDIN")
        out = []
        with cur.copy("COPY (SELECT k, s FROM a WHERE k >= 18 ORDER BY k) TO STDOUT") as copy:
            for r in copy.rows():
                out.append(r)
        check(out == [("18", "s18\t!"), ("19", "s19\t!")], f"COPY TO STDOUT: {out}")

    # Cancel: a query that would run for hours stops with QueryCanceled.
    conn.execute("CREATE TABLE big (k BIGINT)")
    conn.execute("INSERT INTO big SELECT * FROM generate_series(1, 2000)")
    done = threading.Event()

    def cancel_until_done():
        time.sleep(0.05)
        while not done.is_set():
            conn.cancel_safe()
            done.wait(0.05)

    canceller = threading.Thread(target=cancel_until_done)
    canceller.start()
    started = time.monotonic()
    try:
        conn.execute(
            "SELECT count(*) FROM generate_series(1, 1000000000000) g JOIN big ON g.value = big.k + 5000"
        )
        raise AssertionError("the query was not cancelled")
    except errors.QueryCanceled:
        pass
    finally:
        done.set()
        canceller.join()
    check(time.monotonic() - started < 30, "the cancel took too long")
    check(conn.execute("SELECT 1 + 1").fetchone()[0] == 2, "the connection after a cancel")

print("all checks passed")
