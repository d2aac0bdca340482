"""strata from Python: a storage-aware relational engine, in this process.

    import strata
    con = strata.connect("shop.db")          # created when it does not exist
    con.sql("CREATE TABLE t (k INT PRIMARY KEY, v VARCHAR(20))")
    con.execute("INSERT INTO t VALUES ($1, $2)", [1, "one"])
    con.sql("SELECT * FROM t").arrow()       # a pyarrow.Table, no copy
    con.sql("SELECT * FROM t").df()          # pandas
    con.sql("SELECT * FROM t").fetchall()    # [(1, 'one')]

Results export Arrow through the PyCapsule stream interface
(``__arrow_c_stream__``), so ``pyarrow.table(r)``, ``polars.DataFrame(r)`` and
DuckDB read them in place. ``con.cursor()`` is a PEP 249 (DB-API 2.0) cursor.
Errors are the PEP 249 exceptions in ``strata.errors`` with ``e.sqlstate``.
"""

import datetime as _datetime
import os as _os
import re as _re
import time as _time

from . import _strata, errors
from ._strata import Result
from .errors import (
    DatabaseError,
    DataError,
    Error,
    IntegrityError,
    InterfaceError,
    InternalError,
    NotSupportedError,
    OperationalError,
    ProgrammingError,
    Warning,
)

__version__ = _strata.__version__

# PEP 249 module globals.
apilevel = "2.0"
#: Threads may share the module, not a connection (each thread its own).
threadsafety = 1
#: Parameters are PostgreSQL's ``$1, $2, ...`` (numbered from 1).
paramstyle = "numeric"

_SETTING = _re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
_NAME = _re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def connect(database=None, read_only=False, *, buffer_pool="256MiB", device="real", config=None):
    """Opens the strata database in directory ``database`` (created when it
    does not exist), or a temporary one removed at ``close()`` when
    ``database`` is None or ``":memory:"``.

    ``read_only=True`` never writes and opens beside other readers.
    ``buffer_pool`` is the page cache's size (``"64MiB"``); ``device`` is
    ``real`` (direct I/O), ``buffered``, or a modeled ``hdd``/``ssd``.
    ``config`` is a dict of session settings (``{"strata.access_path":
    "smooth"}``), as ``SET`` takes them.
    """
    if database is not None:
        database = _os.fspath(database)
    con = Connection(_strata.Connection(database, read_only, buffer_pool, device))
    for key, value in (config or {}).items():
        con.set(key, value)
    return con


def _identifier(name, what="table name"):
    if not isinstance(name, str) or not _NAME.match(name):
        raise ProgrammingError(f"{name!r} is not a {what} (letters, digits and _)")
    return name


def _quoted(text):
    return "'" + str(text).replace("'", "''") + "'"


def _arrow_source(data):
    """``data`` as something with ``__arrow_c_stream__``: pandas DataFrames
    without it (pandas < 2.2) go through pyarrow."""
    if hasattr(data, "__arrow_c_stream__"):
        return data
    module = type(data).__module__.split(".")[0]
    if module == "pandas":
        import pyarrow

        return pyarrow.Table.from_pandas(data, preserve_index=False)
    raise ProgrammingError(
        f"cannot read a {type(data).__name__}: give a pyarrow Table or RecordBatchReader, "
        "a pandas or polars DataFrame, or anything with __arrow_c_stream__"
    )


_METRIC = _re.compile(r"(\w+)=([^,\]]+)")


def _operators(plan_text):
    """The operators of an EXPLAIN ANALYZE plan with their metrics."""
    out = []
    for line in plan_text.splitlines():
        stripped = line.strip()
        if not stripped or ":" not in stripped:
            continue
        name = stripped.split(":", 1)[0]
        if not name.isidentifier():
            continue
        metrics = {}
        m = _re.search(r"metrics=\[(.*?)\]", stripped)
        if m:
            for key, value in _METRIC.findall(m.group(1)):
                metrics[key] = _metric_value(value.strip())
        out.append({"operator": name, "depth": (len(line) - len(line.lstrip())) // 2, "metrics": metrics})
    return out


def _metric_value(text):
    try:
        return int(text)
    except ValueError:
        pass
    for unit, scale in (("ns", 1e-6), ("µs", 1e-3), ("us", 1e-3), ("ms", 1.0), ("s", 1000.0)):
        if text.endswith(unit):
            try:
                return float(text[: -len(unit)]) * scale
            except ValueError:
                break
    return text


class Connection:
    """A connection to a strata database in this process (``strata.connect``)."""

    def __init__(self, native):
        self._native = native
        self._blocks = 0

    # -- statements ---------------------------------------------------------

    def sql(self, query, params=None):
        """Runs one statement; returns its :class:`Result`. ``params`` binds
        ``$1, $2, ...`` (None, bool, int, float, Decimal, str, date,
        datetime). The GIL is released while it runs; Ctrl-C cancels it."""
        return self._native.execute(query, params)

    execute = sql

    def executemany(self, query, seq_of_params):
        """Runs ``query`` once per parameter sequence, all in one transaction
        (unless one is open already); returns the rows written."""
        own = not self._native.in_transaction
        if own:
            self._native.execute("BEGIN")
        total = 0
        try:
            for params in seq_of_params:
                r = self._native.execute(query, params)
                total += max(r.rowcount, 0)
        except BaseException:
            if own and self._native.in_transaction:
                self._native.execute("ROLLBACK")
            raise
        if own:
            self._native.execute("COMMIT")
        return total

    def cursor(self):
        """A PEP 249 cursor over this connection."""
        return Cursor(self)

    # -- transactions -------------------------------------------------------

    @property
    def in_transaction(self):
        """Whether a BEGIN waits for its COMMIT or ROLLBACK."""
        return self._native.in_transaction

    def begin(self):
        """Starts a transaction: statements until ``commit()`` or
        ``rollback()`` apply together or not at all. Without one, each
        statement commits on its own (strata connections start in autocommit
        mode, as DuckDB's do)."""
        self._native.execute("BEGIN")

    def commit(self):
        """Commits the open transaction (nothing when there is none)."""
        if self._native.in_transaction:
            self._native.execute("COMMIT")

    def rollback(self):
        """Rolls the open transaction back (nothing when there is none)."""
        if self._native.in_transaction:
            self._native.execute("ROLLBACK")

    def __enter__(self):
        """``with con:`` runs the block as one transaction: committed when
        it ends, rolled back when it raises."""
        if self._blocks > 0:
            # Nested: the outermost block commits.
            self._blocks += 1
        elif not self._native.in_transaction:
            self._native.execute("BEGIN")
            self._blocks = 1
        # Inside a transaction begun by begin(): that one's commit() ends it.
        return self

    def __exit__(self, exc_type, exc, tb):
        if self._blocks > 1:
            self._blocks -= 1
            return False
        if self._blocks == 1:
            self._blocks = 0
            if exc_type is None:
                self.commit()
            else:
                self.rollback()
        return False

    def close(self):
        """Closes the database; an open transaction is rolled back; a
        temporary database is removed."""
        self._native.close()

    @property
    def closed(self):
        return self._native.closed

    @property
    def database(self):
        """The database's directory."""
        return str(self._native.database)

    @property
    def read_only(self):
        return self._native.read_only

    # -- Python data in -----------------------------------------------------

    def register(self, name, data):
        """Makes ``data`` (a pyarrow Table or RecordBatchReader, a pandas or
        polars DataFrame, anything with ``__arrow_c_stream__``) a table named
        ``name`` for this connection's queries. It is not stored: see
        ``load``."""
        self._native.register(_identifier(name), _arrow_source(data))
        return self

    def unregister(self, name):
        """Forgets a table made by ``register``."""
        return self._native.unregister(name)

    def load(self, name, source):
        """Stores ``source`` as a new strata table ``name``: a Parquet or CSV
        file (a path), or Arrow data as ``register`` takes it. Returns the
        rows loaded."""
        _identifier(name)
        if isinstance(source, (str, bytes, _os.PathLike)):
            path = _os.fsdecode(source)
            lower = path.lower()
            if lower.endswith(".parquet"):
                reader = "read_parquet"
            elif lower.endswith((".csv", ".tsv", ".txt", ".csv.gz")):
                reader = "read_csv"
            else:
                raise ProgrammingError(f"{path}: load reads .parquet and .csv files")
            self._native.execute(f"CREATE TABLE {name} AS SELECT * FROM {reader}({_quoted(path)})")
        else:
            temp = f"__strata_load_{name}"
            self._native.register(temp, _arrow_source(source))
            try:
                self._native.execute(f"CREATE TABLE {name} AS SELECT * FROM {temp}")
            finally:
                self._native.unregister(temp)
        return self._native.execute(f"SELECT count(*) FROM {name}").fetchone()[0]

    # -- strata's own features ----------------------------------------------

    def set(self, key, value):
        """A session setting, as ``SET key = value`` (``strata.access_path``,
        ``strata.index_cache``, ...)."""
        if not _SETTING.match(key):
            raise ProgrammingError(f"{key!r} is not a setting name")
        if isinstance(value, bool):
            value = "true" if value else "false"
        self._native.execute(f"SET {key} = {_quoted(value)}")

    def get(self, key):
        """A session setting's value as text."""
        if not _SETTING.match(key):
            raise ProgrammingError(f"{key!r} is not a setting name")
        row = self._native.execute(f"SHOW {key}").fetchone()
        return None if row is None else row[-1]

    def tables(self):
        """The names of the database's tables and views."""
        rows = self._native.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = 'public' ORDER BY table_name"
        ).fetchall()
        return [r[0] for r in rows]

    def describe(self, table):
        """A table's columns with their SQL types (``DESCRIBE``)."""
        return self._native.execute(f"DESCRIBE {_identifier(table)}")

    def explain(self, query, analyze=False):
        """The plan of ``query`` as text; with ``analyze``, run, with each
        operator's counters and the total time."""
        verb = "EXPLAIN ANALYZE " if analyze else "EXPLAIN "
        rows = self._native.execute(verb + query).fetchall()
        return "\n".join(f"{kind}:\n{plan}" for kind, plan in rows)

    def explain_analyze(self, query):
        """``EXPLAIN ANALYZE`` as a dict: the plan text, the wall time, the
        storage device's counters (pages, requests) and each operator's
        metrics (rows, time, strata's scan counters)."""
        r = self._native.execute("EXPLAIN ANALYZE " + query)
        rows = r.fetchall()
        plan = "\n".join(p for kind, p in rows if kind != "Total time")
        return {
            "plan": plan,
            "elapsed_ms": r.elapsed * 1000.0,
            "io": r.io,
            "operators": _operators(plan),
        }

    def waste(self, table=None):
        """What a table's storage wastes (``strata waste``): a Result."""
        arg = "" if table is None else _quoted(_identifier(table))
        return self._native.execute(f"SELECT * FROM strata_waste({arg})")

    def compact(self, table, format=None, plain=False):
        """Rewrites ``table`` as ``strata compact`` does: each column in the
        narrowest encoding its values allow (``plain=True``: as declared
        again), or converted with ``format="columns"`` (Parquet row groups: a
        scan reads only the columns it uses) or ``"rows"``. Returns the
        report as a dict."""
        return self._native.compact(_identifier(table), format, plain)

    def tier(self, table, to="cold", endpoint=None, bucket=None, object_size="1GiB",
             delete_objects=False):
        """Moves ``table`` to the cold tier (``to="cold"``: objects on the cold
        storage device at ``endpoint``, e.g. ``strata csd serve``'s) or back
        to local files (``to="local"``), as ``strata tier`` does. Queries
        read a cold table as any other. Returns the report as a dict."""
        return self._native.tier(_identifier(table), to, endpoint, bucket, object_size,
                                 delete_objects)

    def __repr__(self):
        state = "closed" if self.closed else ("read-only" if self.read_only else "read-write")
        return f"<strata.Connection {self.database!r} {state}>"


class Cursor:
    """A PEP 249 (DB-API 2.0) cursor: ``execute``, ``fetch*``,
    ``description``, ``rowcount``."""

    arraysize = 1

    def __init__(self, connection):
        self.connection = connection
        self._result = None
        self._closed = False
        self.rowcount = -1
        self.lastrowid = None

    def _check(self):
        if self._closed:
            raise InterfaceError("the cursor is closed")
        if self.connection.closed:
            raise InterfaceError("the connection is closed")

    @property
    def description(self):
        """One 7-tuple per column (name, type_code, None, None, precision,
        scale, None); None after a statement that answers no rows."""
        r = self._result
        if r is None or not r.returns_rows:
            return None
        out = []
        for name, t in zip(r.columns, r.types):
            precision = scale = None
            m = _re.match(r"DECIMAL\((\d+),(\d+)\)", t)
            if m:
                precision, scale = int(m.group(1)), int(m.group(2))
            out.append((name, t, None, None, precision, scale, None))
        return out

    def execute(self, operation, parameters=None):
        self._check()
        self._result = self.connection.sql(operation, parameters)
        self.rowcount = self._result.rowcount
        return self

    def executemany(self, operation, seq_of_parameters):
        self._check()
        self.rowcount = self.connection.executemany(operation, seq_of_parameters)
        self._result = None
        return self

    def _rows(self):
        self._check()
        if self._result is None or not self._result.returns_rows:
            raise ProgrammingError("the last statement answered no rows to fetch")
        return self._result

    def fetchone(self):
        return self._rows().fetchone()

    def fetchmany(self, size=None):
        return self._rows().fetchmany(self.arraysize if size is None else size)

    def fetchall(self):
        return self._rows().fetchall()

    def arrow(self):
        return self._rows().arrow()

    def df(self):
        return self._rows().df()

    def __iter__(self):
        while True:
            row = self.fetchone()
            if row is None:
                return
            yield row

    def close(self):
        self._closed = True
        self._result = None

    def setinputsizes(self, sizes):
        pass

    def setoutputsize(self, size, column=None):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


# PEP 249 type objects and constructors.
class _TypeObject:
    def __init__(self, *names):
        self.names = frozenset(names)

    def __eq__(self, other):
        if isinstance(other, str):
            return other.split("(")[0] in self.names
        return NotImplemented

    def __hash__(self):
        return hash(self.names)


STRING = _TypeObject("VARCHAR", "CHAR", "TEXT")
BINARY = _TypeObject("BINARY", "BYTEA")
NUMBER = _TypeObject("INTEGER", "BIGINT", "DOUBLE", "DECIMAL")
DATETIME = _TypeObject("DATE", "TIMESTAMP")
ROWID = _TypeObject()

Date = _datetime.date
Time = _datetime.time
Timestamp = _datetime.datetime
Binary = bytes


def DateFromTicks(ticks):  # noqa: N802 - PEP 249's name
    return Date(*_time.localtime(ticks)[:3])


def TimeFromTicks(ticks):  # noqa: N802
    return Time(*_time.localtime(ticks)[3:6])


def TimestampFromTicks(ticks):  # noqa: N802
    return Timestamp(*_time.localtime(ticks)[:6])


__all__ = [
    "connect",
    "Connection",
    "Cursor",
    "Result",
    *errors.__all__,
    "apilevel",
    "threadsafety",
    "paramstyle",
    "STRING",
    "BINARY",
    "NUMBER",
    "DATETIME",
    "ROWID",
    "Date",
    "Time",
    "Timestamp",
    "Binary",
    "DateFromTicks",
    "TimeFromTicks",
    "TimestampFromTicks",
]
