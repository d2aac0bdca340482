"""strata.connect(), statements, results as Arrow and as Python values,
parameters, registering Python data, loading files, strata's settings and
counters."""

import datetime
import decimal
import os

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

import strata


def test_a_database_is_created_reopened_and_read_only_refuses_writes(tmp_path):
    path = tmp_path / "shop"
    con = strata.connect(path)
    con.sql("CREATE TABLE t (k INT PRIMARY KEY, v VARCHAR(10))")
    assert con.sql("INSERT INTO t VALUES (1, 'one'), (2, 'two')").rowcount == 2
    con.close()
    assert con.closed
    with pytest.raises(strata.InterfaceError):
        con.sql("SELECT 1")

    ro = strata.connect(path, read_only=True)
    assert ro.read_only
    assert ro.sql("SELECT v FROM t ORDER BY k").fetchall() == [("one",), ("two",)]
    with pytest.raises(strata.Error) as e:
        ro.sql("INSERT INTO t VALUES (3, 'three')")
    assert e.value.sqlstate is not None
    ro.close()

    with pytest.raises(strata.OperationalError, match="not a strata database"):
        strata.connect(tmp_path / "nothing", read_only=True)
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "file.txt").write_text("x")
    with pytest.raises(strata.OperationalError, match="not a strata database"):
        strata.connect(tmp_path / "junk")


def test_a_read_only_connection_reads_beside_a_writer(tmp_path):
    path = tmp_path / "shop"
    w = strata.connect(path)
    w.sql("CREATE TABLE t (k INT, v VARCHAR(10))")
    w.sql("INSERT INTO t VALUES (1, 'one')")
    ro = strata.connect(path, read_only=True)
    assert ro.sql("SELECT count(*) FROM t").fetchall() == [(1,)]
    # Each statement reads the commits made before it began.
    w.sql("INSERT INTO t VALUES (2, 'two')")
    assert ro.sql("SELECT count(*), max(k) FROM t").fetchall() == [(2, 2)]
    with pytest.raises(strata.Error, match="holds it for writing"):
        ro.sql("INSERT INTO t VALUES (3, 'x')")
    ro.close()
    w.close()


def test_a_temporary_database_is_removed_when_closed():
    con = strata.connect()
    where = con.database
    con.sql("CREATE TABLE t (a INT)")
    assert os.path.isdir(where)
    con.close()
    assert not os.path.exists(where)


TYPES = """CREATE TABLE every (
    i INT, b BIGINT, f DOUBLE, d DECIMAL(15,2), dt DATE, ts TIMESTAMP,
    s VARCHAR(40), c CHAR(5), ok BOOLEAN)"""

ROW = (
    -2147483648,
    9223372036854775807,
    -1.5e-300,
    decimal.Decimal("-1234567890123.45"),
    datetime.date(1992, 2, 29),
    datetime.datetime(2024, 12, 31, 23, 59, 58, 123456),
    "it's a \"quote\" -- not a comment $1",
    "abc",
    True,
)


def test_every_type_round_trips_through_parameters_and_results(con):
    con.sql(TYPES)
    con.execute("INSERT INTO every VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)", ROW)
    con.execute("INSERT INTO every VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)", [None] * 9)
    rows = con.sql("SELECT * FROM every ORDER BY i NULLS LAST").fetchall()
    got = rows[0]
    assert got[:6] == ROW[:6]
    assert [type(v) for v in got] == [
        int, int, float, decimal.Decimal, datetime.date, datetime.datetime, str, str, bool
    ]
    assert got[6] == ROW[6]
    assert got[7].rstrip() == "abc"
    assert got[8] is True
    assert rows[1] == (None,) * 9
    # Each value as a parameter comes back as itself, in a WHERE too.
    for v in ROW:
        assert con.execute("SELECT $1", [v]).fetchone()[0] == v
    assert con.execute("SELECT count(*) FROM every WHERE d = $1 AND dt = $2", [ROW[3], ROW[4]]).fetchone() == (1,)
    # Arrow's types are the SQL types'.
    t = con.sql("SELECT * FROM every").arrow()
    assert t.schema.field("i").type == pa.int32()
    assert t.schema.field("b").type == pa.int64()
    assert t.schema.field("d").type == pa.decimal128(15, 2)
    assert t.schema.field("dt").type == pa.date32()
    assert t.schema.field("ts").type == pa.timestamp("us")
    assert t.schema.field("ok").type == pa.bool_()
    assert t.column("d").to_pylist() == [ROW[3], None]


def test_parameters_that_cannot_be_bound_are_refused_by_name(con):
    with pytest.raises(strata.ProgrammingError, match=r"uses \$2 but 1 parameter"):
        con.execute("SELECT $1, $2", [1])
    with pytest.raises(strata.NotSupportedError, match=r"\$1: cannot bind a value of type list"):
        con.execute("SELECT $1", [[1, 2]])
    with pytest.raises(strata.NotSupportedError, match="time zone"):
        con.execute("SELECT $1", [datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)])
    with pytest.raises(strata.ProgrammingError, match="sequence"):
        con.execute("SELECT $1", "abc")
    with pytest.raises(strata.DataError, match="not a number"):
        con.execute("SELECT $1", [decimal.Decimal("NaN")])
    # A string parameter is a value, never SQL.
    assert con.execute("SELECT $1", ["1); DROP TABLE x; --"]).fetchone() == ("1); DROP TABLE x; --",)
    assert con.execute("SELECT - $1", [-5]).fetchone() == (5,)


def test_errors_are_pep_249_classes_with_their_sqlstate(con):
    con.sql("CREATE TABLE t (k INT PRIMARY KEY, n BIGINT NOT NULL)")
    cases = [
        ("SELEC 1", strata.ProgrammingError, "42601"),
        ("SELECT * FROM nowhere", strata.ProgrammingError, "42P01"),
        ("SELECT nothing FROM t", strata.ProgrammingError, "42703"),
        ("SELECT 9223372036854775807 + CAST(1 AS BIGINT)", strata.DataError, "22003"),
        ("SELECT CAST('abc' AS INT)", strata.DataError, None),
        ("INSERT INTO t VALUES (1, NULL)", strata.IntegrityError, "23502"),
    ]
    for sql, cls, state in cases:
        with pytest.raises(cls) as e:
            con.sql(sql)
        assert isinstance(e.value, strata.DatabaseError)
        if state is not None:
            assert e.value.sqlstate == state, (sql, e.value.sqlstate, str(e.value))
    con.sql("INSERT INTO t VALUES (1, 1)")
    with pytest.raises(strata.IntegrityError) as e:
        con.sql("INSERT INTO t VALUES (1, 2)")
    assert e.value.sqlstate == "23505"
    # The connection goes on after each error.
    assert con.sql("SELECT n FROM t").fetchall() == [(1,)]


def test_a_result_exports_arrow_any_number_of_times_without_copying(con):
    con.sql("CREATE TABLE t AS SELECT * FROM (VALUES (1, 'a'), (2, 'b'), (3, NULL)) AS v(k, s)")
    r = con.sql("SELECT k, s FROM t ORDER BY k")
    first = pa.table(r)
    second = pa.table(r)
    third = r.arrow()
    assert first.equals(second) and first.equals(third)
    assert first.num_rows == len(r) == 3

    def addresses(t):
        return [b.address for col in t.columns for chunk in col.chunks for b in chunk.buffers() if b is not None]

    # The same buffers every time: the result's own, never copied.
    assert addresses(first) == addresses(second) == addresses(third)
    reader = pa.RecordBatchReader.from_stream(r)
    assert reader.read_all().equals(first)
    # A consumer may ask for another schema; the result is cast to it.
    wanted = pa.schema([("k", pa.int64()), ("s", pa.large_string())])
    cast = pa.table(pa.RecordBatchReader.from_stream(r, schema=wanted))
    assert cast.schema == wanted and cast.column("k").to_pylist() == [1, 2, 3]
    # fetch* and the stream are independent.
    assert r.fetchone() == (1, "a")
    assert r.fetchmany(5) == [(2, "b"), (3, None)]
    assert r.fetchone() is None
    assert pa.table(r).num_rows == 3


def test_pandas_and_polars_read_results_and_are_read_back(con):
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    con.sql("CREATE TABLE t AS SELECT * FROM (VALUES (1, 2.5), (2, 3.5)) AS v(k, x)")
    df = con.sql("SELECT k, x FROM t ORDER BY k").df()
    assert list(df.columns) == ["k", "x"] and df["k"].tolist() == [1, 2]
    p = con.sql("SELECT k FROM t ORDER BY k").pl()
    assert p["k"].to_list() == [1, 2]
    # Data from Python, queried beside strata's tables.
    con.register("people", pd.DataFrame({"k": [1, 2, 3], "name": ["ann", "bob", "cy"]}))
    con.register("scores", pl.DataFrame({"k": [2, 3], "score": [10, 20]}))
    got = con.sql(
        "SELECT p.name, s.score, t.x FROM people p JOIN scores s ON p.k = s.k "
        "LEFT JOIN t ON t.k = p.k ORDER BY p.name"
    ).fetchall()
    assert got == [("bob", 10, decimal.Decimal("3.5")), ("cy", 20, None)]
    assert con.unregister("people") is True
    with pytest.raises(strata.ProgrammingError):
        con.sql("SELECT * FROM people")
    with pytest.raises(strata.ProgrammingError, match="table of the database"):
        con.register("t", pa.table({"a": [1]}))
    with pytest.raises(strata.ProgrammingError, match="cannot read"):
        con.register("x", object())


def test_load_stores_arrow_parquet_and_csv_as_tables(con, tmp_path):
    table = pa.table({
        "id": pa.array(range(1000), pa.int64()),
        "name": [f"n{i}" for i in range(1000)],
        "day": pa.array([datetime.date(2020, 1, 1) + datetime.timedelta(days=i % 400) for i in range(1000)]),
    })
    assert con.load("from_arrow", table) == 1000
    pq.write_table(table, tmp_path / "t.parquet")
    assert con.load("from_parquet", tmp_path / "t.parquet") == 1000
    pacsv.write_csv(table, tmp_path / "t.csv")
    assert con.load("from_csv", str(tmp_path / "t.csv")) == 1000
    for name in ("from_arrow", "from_parquet", "from_csv"):
        back = con.sql(f"SELECT id, name, day FROM {name} ORDER BY id").arrow()
        assert back.column("id").to_pylist() == table.column("id").to_pylist(), name
        assert back.column("name").to_pylist() == table.column("name").to_pylist(), name
        assert back.column("day").to_pylist() == table.column("day").to_pylist(), name
    assert set(con.tables()) >= {"from_arrow", "from_parquet", "from_csv"}
    # Stored: a new connection sees them.
    where = con.database
    con.close()
    again = strata.connect(where)
    assert again.sql("SELECT count(*) FROM from_arrow").fetchone() == (1000,)
    again.close()
    with pytest.raises(strata.ProgrammingError, match="not a table name"):
        strata.connect().load("bad name", table)


def test_settings_explain_and_counters(con):
    con.sql("CREATE TABLE t AS SELECT * FROM (VALUES (1), (2), (3)) AS v(a)")
    con.set("strata.access_path", "full")
    assert con.get("strata.access_path") == "full"
    with pytest.raises(strata.ProgrammingError):
        con.set("strata.no_such_setting", "1")
    with pytest.raises(strata.ProgrammingError):
        con.set("a; DROP TABLE t", "1")
    text = con.explain("SELECT sum(a) FROM t")
    assert "logical_plan" in text and "physical_plan" in text
    info = con.explain_analyze("SELECT sum(a) FROM t")
    assert info["elapsed_ms"] > 0
    assert set(info["io"]) >= {"pages_read", "read_requests", "bytes_read"}
    ops = {o["operator"]: o["metrics"] for o in info["operators"]}
    assert any(m.get("output_rows") == 3 for m in ops.values()), info["plan"]
    r = con.sql("SELECT * FROM t")
    assert r.elapsed >= 0 and "pages_read" in r.io
    waste = con.waste("t")
    assert waste.returns_rows and "table_name" in waste.columns
    assert {r[0] for r in waste.fetchall()} == {"t"}
    assert con.describe("t").fetchall()[0][0] == "a"


def test_compact_and_columns_keep_the_answers(con):
    con.sql("CREATE TABLE t (k BIGINT, grade VARCHAR(40), n INT)")
    con.register("src", pa.table({
        "k": list(range(5000)),
        "grade": [("low", "mid", "high")[i % 3] for i in range(5000)],
        "n": [i % 100 for i in range(5000)],
    }))
    con.sql("INSERT INTO t SELECT * FROM src")
    query = "SELECT grade, count(*), sum(k), max(n) FROM t GROUP BY grade ORDER BY grade"
    before = con.sql(query).fetchall()
    r = con.compact("t")
    assert r["rows"] == 5000 and r["pages_after"] < r["pages_before"], r
    assert any(c[0] == "k" for c in r["columns_changed"]), r
    assert con.sql(query).fetchall() == before
    r = con.compact("t", format="columns")
    assert r["format"] == "columns" and r["rows"] == 5000 and r["column_bytes_after"] > 0, r
    assert con.sql(query).fetchall() == before
    with pytest.raises(strata.ProgrammingError, match="expected 'rows' or 'columns'"):
        con.compact("t", format="diagonal")
    con.begin()
    with pytest.raises(strata.InternalError, match="inside a transaction"):
        con.compact("t")
    con.rollback()


def test_a_table_moved_to_the_cold_tier_and_back_answers_the_same(con, tmp_path):
    import socket
    import subprocess
    import time

    from conftest import strata_binary

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    csd = subprocess.Popen(
        [str(strata_binary()), "csd", "serve", "--data", str(tmp_path / "csd"),
         "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert csd.poll() is None, csd.stderr.read().decode()
                assert time.monotonic() < deadline, "strata csd serve did not listen"
                time.sleep(0.05)
        con.sql("CREATE TABLE t AS SELECT * FROM (VALUES (1, 'a'), (2, 'b'), (3, 'c')) AS v(k, s)")
        query = "SELECT k, s FROM t ORDER BY k"
        before = con.sql(query).fetchall()
        r = con.tier("t", "cold", endpoint=f"http://127.0.0.1:{port}")
        assert r["objects"] >= 1 and r["bytes"] > 0, r
        assert con.sql(query).fetchall() == before
        r = con.tier("t", "local")
        assert r["files"] >= 1, r
        assert con.sql(query).fetchall() == before
        with pytest.raises(strata.ProgrammingError, match="needs endpoint"):
            con.tier("t", "cold")
    finally:
        csd.terminate()
        csd.wait()


def test_decimals_keep_scale_and_sign_and_each_sqlstate_class_has_its_exception(con):
    got = con.sql(
        "SELECT CAST(-0.05 AS DECIMAL(5,2)), CAST(0 AS DECIMAL(6,3)), CAST(7 AS DECIMAL(3,0)), "
        "CAST(123.45 AS DECIMAL(18,2)), CAST(-999999999999999.999 AS DECIMAL(18,3))"
    ).fetchone()
    assert [str(v) for v in got] == ["-0.05", "0.000", "7", "123.45", "-999999999999999.999"]
    assert [type(v) for v in got] == [decimal.Decimal] * 5
    con.sql("CREATE TABLE k (a INT PRIMARY KEY)")
    con.begin()
    # 25000 (a transaction state): InternalError, as psycopg classes class 25.
    with pytest.raises(strata.InternalError) as e:
        con.sql("CREATE TABLE x (a INT)")
    assert e.value.sqlstate == "25000"
    con.rollback()
    # 0A000: NotSupportedError; 42704 (unknown setting): ProgrammingError.
    with pytest.raises(strata.NotSupportedError) as e:
        con.execute("SELECT $1", [b"bytes"])
    assert e.value.sqlstate == "0A000"
    with pytest.raises(strata.ProgrammingError) as e:
        con.set("strata.nothing", "1")
    assert e.value.sqlstate == "42704"
