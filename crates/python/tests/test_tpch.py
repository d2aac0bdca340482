"""The 22 TPC-H queries from Python give DuckDB's answers.

`strata gen tpch --sf 0.01 --parquet DIR` makes a strata database and, from
the same batches, Parquet files; DuckDB (the pinned package) answers over the
Parquet files, strata over its own tables through this binding. The answers
are compared by scripts/tpch_check.py's rules (the TPC-H specification's
precision rules, ORDER BY ties as sets). The same strata answers, handed to
DuckDB as Arrow, are also compared by DuckDB itself.
"""

import importlib.util
import subprocess

import pytest

import strata

from conftest import REPO, strata_binary

SF = "0.01"


def _checker():
    spec = importlib.util.spec_from_file_location("tpch_check", REPO / "scripts" / "tpch_check.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def tpch(tmp_path_factory):
    root = tmp_path_factory.mktemp("tpch")
    db, pq = root / "db", root / "pq"
    out = subprocess.run(
        [str(strata_binary()), "--db", str(db), "gen", "tpch", "--sf", SF, "--parquet", str(pq)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return db, pq


def test_all_22_tpch_answers_equal_duckdbs(tpch):
    db, pq = tpch
    check = _checker()
    duck = check.open_duckdb(pq)
    con = strata.connect(db, read_only=True)
    failures = []
    queries = sorted((REPO / "crates" / "sql" / "queries").glob("q*.sql"))
    assert len(queries) == 22
    for path in queries:
        sql = path.read_text()
        name = path.stem
        r = con.sql(sql)
        header = r.columns
        actual = [[check.format_value(v) for v in row] for row in r.fetchall()]
        names, expected, _ = check.run_duckdb(duck, sql, name)
        keys = check.order_keys(sql, names, name)
        failures += check.compare(name, names, expected, header, actual, keys)
        # The Arrow stream of the same result, read by DuckDB itself.
        answer = r.arrow()  # noqa: F841 - DuckDB finds it by name
        assert duck.sql("SELECT count(*) FROM answer").fetchone()[0] == len(actual)
    con.close()
    assert not failures, "\n".join(failures)
