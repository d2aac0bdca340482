"""PEP 249: module globals, cursors, transactions, Ctrl-C, threads."""

import _thread
import signal
import threading
import time

import pytest

import strata


def test_module_globals_and_type_objects():
    assert strata.apilevel == "2.0"
    assert strata.threadsafety == 1
    assert strata.paramstyle == "numeric"
    assert "DECIMAL(15,2)" == strata.NUMBER
    assert "VARCHAR" == strata.STRING and "DATE" == strata.DATETIME
    assert "VARCHAR" != strata.NUMBER
    for cls in (strata.DataError, strata.IntegrityError, strata.ProgrammingError,
                strata.OperationalError, strata.InternalError, strata.NotSupportedError):
        assert issubclass(cls, strata.DatabaseError) and issubclass(cls, strata.Error)
    assert issubclass(strata.InterfaceError, strata.Error)


def test_a_cursor_describes_fetches_and_counts(con):
    cur = con.cursor()
    cur.execute("CREATE TABLE t (k INT PRIMARY KEY, price DECIMAL(10,2), name VARCHAR(20))")
    assert cur.description is None
    cur.executemany("INSERT INTO t VALUES ($1, $2, $3)", [(i, i * 1.5, f"n{i}") for i in range(10)])
    assert cur.rowcount == 10
    cur.execute("UPDATE t SET name = 'x' WHERE k < $1", [4])
    assert cur.rowcount == 4 and cur.description is None
    cur.execute("SELECT k, price, name FROM t ORDER BY k")
    assert [d[0] for d in cur.description] == ["k", "price", "name"]
    assert cur.description[1][1] == strata.NUMBER
    assert cur.description[1][4:6] == (10, 2)
    assert cur.rowcount == 10
    cur.arraysize = 3
    assert len(cur.fetchmany()) == 3
    assert cur.fetchone()[0] == 3
    assert [r[0] for r in cur] == [4, 5, 6, 7, 8, 9]
    assert cur.fetchall() == []
    cur.execute("DELETE FROM t WHERE k >= 8")
    assert cur.rowcount == 2
    with pytest.raises(strata.ProgrammingError, match="no rows"):
        cur.fetchall()
    cur.close()
    with pytest.raises(strata.InterfaceError):
        cur.execute("SELECT 1")


def test_with_connection_commits_or_rolls_back(con):
    con.sql("CREATE TABLE t (k INT PRIMARY KEY)")
    with con:
        con.execute("INSERT INTO t VALUES ($1)", [1])
        assert con.in_transaction
    assert not con.in_transaction
    with pytest.raises(ZeroDivisionError):
        with con:
            con.execute("INSERT INTO t VALUES ($1)", [2])
            1 / 0
    assert con.sql("SELECT k FROM t").fetchall() == [(1,)]
    con.begin()
    con.sql("INSERT INTO t VALUES (3)")
    con.rollback()
    con.begin()
    con.sql("INSERT INTO t VALUES (4)")
    con.commit()
    assert con.sql("SELECT k FROM t ORDER BY k").fetchall() == [(1,), (4,)]
    # executemany is one transaction: a failing row leaves none of them.
    with pytest.raises(strata.IntegrityError):
        con.executemany("INSERT INTO t VALUES ($1)", [(5,), (6,), (1,)])
    assert con.sql("SELECT count(*) FROM t").fetchone() == (2,)


SLOW = "SELECT count(*) FROM big a, big b WHERE a.x + b.x = -1"


def _big(con, rows):
    con.sql("CREATE TABLE big (x BIGINT)")
    con.register("src", __import__("pyarrow").table({"x": list(range(rows))}))
    con.sql("INSERT INTO big SELECT x FROM src")


def test_ctrl_c_cancels_a_running_query_and_the_connection_goes_on(con):
    # A 4*10^10-pair join: about a minute if not cancelled (4*10^8 pairs
    # took 0.7 s here, close to the 0.5 s interrupt).
    _big(con, 200_000)
    # Python raises KeyboardInterrupt on SIGINT only if SIGINT was not
    # ignored when it started, and a shell without job control starts
    # background commands (`.ci/run &`) with SIGINT ignored: then
    # interrupt_main does nothing. The handler a terminal's python has:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.5, _thread.interrupt_main)
    started = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        con.sql(SLOW)
    took = time.monotonic() - started
    timer.join()
    assert took < 60, f"the cancelled query took {took:.1f} s to stop"
    assert con.sql("SELECT count(*) FROM big").fetchone() == (200_000,)
    assert not con.in_transaction


def test_two_threads_query_at_the_same_time(tmp_path):
    cons = [strata.connect(tmp_path / f"db{i}", buffer_pool="64MiB") for i in range(2)]
    for c in cons:
        _big(c, 3000)
    spans = [None, None]
    barrier = threading.Barrier(2)

    def work(i):
        barrier.wait()
        start = time.monotonic()
        cons[i].sql(SLOW)
        spans[i] = (start, time.monotonic())

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    (a0, a1), (b0, b1) = spans
    # Had either held the GIL while it ran, the other could not have started
    # before it ended.
    assert a0 < b1 and b0 < a1, spans
    for c in cons:
        c.close()
