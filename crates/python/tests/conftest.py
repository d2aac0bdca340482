"""Fixtures of the Python binding's tests: a temporary database per test, and
the repository (for the strata binary, the TPC-H queries and
scripts/tpch_check.py)."""

import os
import pathlib

import pytest

import strata

REPO = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture
def con(tmp_path):
    c = strata.connect(tmp_path / "db", buffer_pool="64MiB")
    yield c
    c.close()


def strata_binary():
    """The `strata` command built with the package (target/debug or STRATA_BIN)."""
    given = os.environ.get("STRATA_BIN")
    candidates = [pathlib.Path(given)] if given else [
        REPO / "target" / "debug" / "strata",
        REPO / "target" / "release" / "strata",
    ]
    for c in candidates:
        if c.is_file():
            return c
    raise RuntimeError(
        f"no strata binary at {', '.join(map(str, candidates))}: build it with "
        "`cargo build -p strata-cli` or set STRATA_BIN"
    )
