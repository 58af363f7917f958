# How a query is kept to reading, and to its time.
#
# Writes meet three guards, each enough on its own for the database file:
#
# - the file is opened with ``mode=ro``, SQLite's own read-only open;
# - ``PRAGMA query_only=ON``;
# - an authorizer that allows only what a read statement does (a whitelist of actions,
#   checked by SQLite while it compiles the statement, so no SQL parsing of ours can be
#   fooled). It also stops what a read-only open does not: ATTACH (which creates files,
#   and is the first step of VACUUM INTO), PRAGMAs that change settings, and
#   load_extension.
#
# Python's sqlite3 itself refuses a second statement in one ``execute``.
#
# Time: a progress handler, called every few hundred virtual machine steps, asks
# whether the request was cancelled (``mcpactor.check_cancelled``) and whether the
# deadline passed, and interrupts the statement if so. It cannot raise through SQLite's
# C frames, so it records why it stopped and the caller raises afterwards.

from __future__ import annotations

import sqlite3
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from mcpactor import ToolError, check_cancelled

__all__ = ["Guard", "open_guarded"]

#: virtual machine steps between two looks at the clock and the request's cancellation
PROGRESS_STEPS: Final = 500

_ACTION_NAMES: Final = {
    getattr(sqlite3, f"SQLITE_{name}"): name.replace("_", " ")
    for name in (
        "CREATE_INDEX",
        "CREATE_TABLE",
        "CREATE_TEMP_INDEX",
        "CREATE_TEMP_TABLE",
        "CREATE_TEMP_TRIGGER",
        "CREATE_TEMP_VIEW",
        "CREATE_TRIGGER",
        "CREATE_VIEW",
        "DELETE",
        "DROP_INDEX",
        "DROP_TABLE",
        "DROP_TEMP_INDEX",
        "DROP_TEMP_TABLE",
        "DROP_TEMP_TRIGGER",
        "DROP_TEMP_VIEW",
        "DROP_TRIGGER",
        "DROP_VIEW",
        "INSERT",
        "PRAGMA",
        "READ",
        "SELECT",
        "TRANSACTION",
        "UPDATE",
        "ATTACH",
        "DETACH",
        "ALTER_TABLE",
        "REINDEX",
        "ANALYZE",
        "CREATE_VTABLE",
        "DROP_VTABLE",
        "FUNCTION",
        "SAVEPOINT",
        "RECURSIVE",
    )
}

_READ_ACTIONS: Final = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE}
)
# Pragmas that only report. Those taking a table or index name may have an argument;
# the others are allowed only without one ("PRAGMA user_version = 3" sets it).
_NAMED_PRAGMAS: Final = frozenset(
    {
        "foreign_key_check",
        "foreign_key_list",
        "index_info",
        "index_list",
        "index_xinfo",
        "integrity_check",
        "quick_check",
        "table_info",
        "table_xinfo",
    }
)
_BARE_PRAGMAS: Final = frozenset(
    {
        "application_id",
        "collation_list",
        "compile_options",
        "database_list",
        "encoding",
        "freelist_count",
        "function_list",
        "module_list",
        "page_count",
        "page_size",
        "pragma_list",
        "schema_version",
        "table_list",
        "user_version",
    }
)
_SCHEMA_TABLES: Final = frozenset({"sqlite_master", "sqlite_temp_master", "sqlite_schema"})
_DENIED_FUNCTIONS: Final = frozenset({"load_extension"})


class Guard:
    """The authorizer and progress handler of one connection, and what they saw."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        #: what the authorizer refused first, in words
        self.denied: str | None = None
        #: why the progress handler interrupted the statement
        self.stopped: str | None = None

    def authorize(
        self, action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None
    ) -> int:
        """SQLite's authorizer callback: allow the actions of a read statement only."""
        if action in _READ_ACTIONS:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() not in _DENIED_FUNCTIONS:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_PRAGMA:
            pragma = (arg1 or "").lower()
            if pragma in _NAMED_PRAGMAS or (pragma in _BARE_PRAGMAS and arg2 is None):
                return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_UPDATE and (arg1 or "").lower() in _SCHEMA_TABLES:
            # Pragma table-valued functions (pragma_table_info(...)) ask for this while
            # compiling; the schema tables can never be written here (mode=ro,
            # query_only, and SQLite refuses to modify them in any case).
            return sqlite3.SQLITE_OK
        if self.denied is None:
            self.denied = _describe(action, arg1, arg2)
        return sqlite3.SQLITE_DENY

    def progress(self) -> int:
        """SQLite's progress handler: non-zero interrupts the statement."""
        try:
            check_cancelled()
        except BaseException:
            # Cancelled cannot cross SQLite's C frames: remember it, interrupt the
            # statement, and let ``raise_stop`` raise it once SQLite has unwound.
            self.stopped = "cancelled"
            return 1
        if time.monotonic() > self.deadline:
            self.stopped = "timeout"
            return 1
        return 0

    def explain(self, exc: sqlite3.Error | sqlite3.Warning) -> ToolError:
        """The ToolError for a failed statement; re-raises a cancellation instead."""
        if self.stopped == "cancelled":
            check_cancelled()  # raises trio.Cancelled: the request is still cancelled
            return ToolError("the query was cancelled")
        if self.stopped == "timeout":
            return ToolError(
                f"the query was stopped after {self.timeout:g} s, the time limit; "
                "narrow it down (WHERE, LIMIT) or ask for less"
            )
        if self.denied is not None:
            return ToolError(
                f"refused: this server only runs read-only queries, and {self.denied} "
                "is not allowed"
            )
        if isinstance(exc, sqlite3.ProgrammingError) and "one statement" in str(exc):
            return ToolError("refused: send one statement at a time")
        return ToolError(f"the query failed: {exc}")


def _describe(action: int, arg1: str | None, arg2: str | None) -> str:
    name = _ACTION_NAMES.get(action, f"action {action}")
    if action == sqlite3.SQLITE_PRAGMA:
        return f"PRAGMA {arg1}" + (f" = {arg2}" if arg2 is not None else "")
    if action == sqlite3.SQLITE_FUNCTION:
        return f"the function {arg2}()"
    if (arg1 or "").lower() in _SCHEMA_TABLES:
        # CREATE and DROP show up first as writes to the schema table.
        return "changing the schema"
    target = arg1 or arg2
    return f"{name} ({target})" if target else name


def database_uri(path: str) -> str:
    """The ``file:`` URI that opens ``path`` read-only."""
    return f"file:{urllib.parse.quote(path)}?mode=ro"


@contextmanager
def open_guarded(path: str, timeout: float) -> Iterator[tuple[sqlite3.Connection, Guard]]:
    """Open ``path`` read-only with the guards installed; close it on exit."""
    guard = Guard(timeout)
    try:
        connection = sqlite3.connect(
            database_uri(path), uri=True, isolation_level=None, timeout=min(timeout, 5.0)
        )
    except sqlite3.Error as exc:
        raise ToolError(f"cannot open the database {path!r}: {exc}") from None
    try:
        connection.execute("PRAGMA query_only = ON")
        connection.set_authorizer(guard.authorize)
        connection.set_progress_handler(guard.progress, PROGRESS_STEPS)
        yield connection, guard
    finally:
        connection.close()
