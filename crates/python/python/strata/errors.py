"""The exceptions of PEP 249 (DB-API 2.0), raised by strata with the SQLSTATE
``strata serve`` would send for the same error in ``e.sqlstate``.

The class follows the SQLSTATE's class as psycopg maps PostgreSQL's: 22 is
DataError, 23 IntegrityError, 42 ProgrammingError, 0A NotSupportedError,
08/40/53/54/55/57/58 OperationalError, the rest InternalError. A misuse of
the API itself (a closed connection) is InterfaceError.
"""


class Warning(Exception):  # noqa: A001 - the name PEP 249 gives it
    """Important warnings (PEP 249); strata raises none today."""


class Error(Exception):
    """The base class of every strata error."""

    #: The SQLSTATE of the error (five characters), or None.
    sqlstate = None


class InterfaceError(Error):
    """A misuse of the Python API (a closed connection or cursor)."""


class DatabaseError(Error):
    """An error of the database."""


class DataError(DatabaseError):
    """A value that does not fit its type: out of range, not a number, a bad date (SQLSTATE 22)."""


class OperationalError(DatabaseError):
    """The database's operation: a cancelled statement, a lock timeout, I/O (SQLSTATE 08, 53-58)."""


class IntegrityError(DatabaseError):
    """A constraint: a duplicate key, NULL in a NOT NULL column (SQLSTATE 23)."""


class InternalError(DatabaseError):
    """The database found itself inconsistent, or corrupt data (SQLSTATE XX and others)."""


class ProgrammingError(DatabaseError):
    """Bad SQL, an unknown table or column, a wrong number of parameters (SQLSTATE 42)."""


class NotSupportedError(DatabaseError):
    """Something strata does not do (SQLSTATE 0A)."""


__all__ = [
    "Warning",
    "Error",
    "InterfaceError",
    "DatabaseError",
    "DataError",
    "OperationalError",
    "IntegrityError",
    "InternalError",
    "ProgrammingError",
    "NotSupportedError",
]
