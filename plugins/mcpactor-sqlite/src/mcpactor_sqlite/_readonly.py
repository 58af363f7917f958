# How a query is kept to reading, to its time and to its size.
#
# Writes meet three guards, each enough on its own for the database file:
#
# - the file is opened with ``mode=ro``, SQLite's own read-only open;
# - ``PRAGMA query_only=ON``;
# - an authorizer that allows only what a read statement does (a whitelist of actions,
#   checked by SQLite while it compiles the statement, so no SQL parsing of ours can be
#   fooled). It also stops what a read-only open does not: ATTACH (which creates files,
#   and is the first step of VACUUM INTO) and PRAGMAs that change settings. Functions
#   are allowed by name from the list of those a read needs (core, date, math, JSON,
#   window and full-text functions): ``load_extension``, ``fts3_tokenizer`` (which
#   hands out and takes native pointers), ``fts5()``, ``sqlite_log`` and whatever an
#   extension or a later SQLite adds are refused.
#
# Python's sqlite3 itself refuses a second statement in one ``execute``.
#
# Time: a progress handler, called every few hundred virtual machine steps, asks
# whether the request was cancelled (``mcpactor.check_cancelled``) and whether the
# deadline passed, and interrupts the statement if so. It cannot raise through SQLite's
# C frames, so it records why it stopped and the caller raises afterwards. The handler
# only runs between steps, so each step is kept small: SQLite's length limit bounds every
# string and blob a step can make or read (``printf('%.*c', 40000000, 'x')`` gives up at
# once instead of running for seconds), the column limit bounds a row, and the other
# limits bound the statement. ``Guard.stop`` interrupts the statement from another
# thread (the query tool's deadline and cancellation), reaching inside a step where
# SQLite looks.

from __future__ import annotations

import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from mcpactor import ToolError, check_cancelled

__all__ = ["ALLOWED_FUNCTIONS", "MAX_COLUMNS", "Guard", "open_guarded"]

#: virtual machine steps between two looks at the clock and the request's cancellation
PROGRESS_STEPS: Final = 500
#: the most columns a result may have (set once the schema is read, so wider tables
#: still open): with the length limit, what bounds one row
MAX_COLUMNS: Final = 256
#: the longest SQL text accepted, in bytes
MAX_SQL_BYTES: Final = 1 << 20
#: the longest LIKE or GLOB pattern
MAX_PATTERN_BYTES: Final = 10_000

#: the functions a read-only query may call: SQLite's core scalar, aggregate, window,
#: date and time, math and JSON functions, and the full-text search helpers
ALLOWED_FUNCTIONS: Final = frozenset(
    {
        # core scalar functions
        "abs", "char", "coalesce", "concat", "concat_ws", "format", "glob", "hex",
        "ifnull", "iif", "if", "instr", "length", "like", "likelihood", "likely", "lower",
        "ltrim", "max", "min", "nullif", "octet_length", "printf", "quote", "random",
        "randomblob", "replace", "round", "rtrim", "sign", "soundex",
        "sqlite_compileoption_get", "sqlite_compileoption_used", "sqlite_source_id",
        "sqlite_version", "substr", "substring", "trim", "typeof", "unhex", "unicode",
        "unlikely", "upper", "zeroblob",
        # aggregate functions
        "avg", "count", "group_concat", "string_agg", "sum", "total", "median",
        "percentile", "percentile_cont", "percentile_disc",
        # window functions
        "row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag",
        "lead", "first_value", "last_value", "nth_value",
        # date and time
        "date", "time", "datetime", "julianday", "unixepoch", "strftime", "timediff",
        "current_date", "current_time", "current_timestamp",
        # math
        "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "ceiling",
        "cos", "cosh", "degrees", "exp", "floor", "ln", "log", "log10", "log2", "mod",
        "pi", "pow", "power", "radians", "sin", "sinh", "sqrt", "tan", "tanh", "trunc",
        # JSON (and its -> and ->> operators)
        "->", "->>", "json", "jsonb", "json_array", "jsonb_array", "json_array_length",
        "json_error_position", "json_extract", "jsonb_extract", "json_insert",
        "jsonb_insert", "json_object", "jsonb_object", "json_patch", "jsonb_patch",
        "json_pretty", "json_quote", "json_remove", "jsonb_remove", "json_replace",
        "jsonb_replace", "json_set", "jsonb_set", "json_type", "json_valid",
        "json_group_array", "jsonb_group_array", "json_group_object", "jsonb_group_object",
        # full-text search: MATCH and the ranking and highlighting helpers
        "match", "bm25", "highlight", "snippet", "matchinfo", "offsets",
    }
)  # fmt: skip

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
        "data_version",  # asked by FTS5 as it reads its index
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


class Guard:
    """The authorizer and progress handler of one connection, and what they saw."""

    def __init__(self, timeout: float, *, max_value_bytes: int) -> None:
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        #: the longest string or blob a statement may make or read
        self.max_value_bytes = max_value_bytes
        #: what the authorizer refused first, in words
        self.denied: str | None = None
        #: why the statement was interrupted: "cancelled" or "timeout"
        self.stopped: str | None = None
        # The connection a statement may be running on, for ``stop`` from other threads.
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._done = False

    def attach(self, connection: sqlite3.Connection) -> None:
        """Let ``stop`` interrupt the statements of ``connection`` from now on."""
        with self._lock:
            self._connection = connection

    def detach(self) -> None:
        """Forget the connection (before it is closed): ``stop`` does nothing after this."""
        with self._lock:
            self._connection = None
            self._done = True

    def stop(self, reason: str) -> None:
        """Interrupt the running statement for ``reason``; callable from any thread.

        A statement not started yet is stopped by the progress handler at its first look.
        """
        with self._lock:
            if self.stopped is not None or self._done:
                return
            self.stopped = reason
            if self._connection is not None:
                self._connection.interrupt()

    def authorize(
        self, action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None
    ) -> int:
        """SQLite's authorizer callback: allow the actions of a read statement only."""
        if action in _READ_ACTIONS:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in ALLOWED_FUNCTIONS:
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
        if self.stopped is not None:
            return 1
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
        if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_TOOBIG:
            return ToolError(
                "a value of the query is more than the limit of "
                f"{self.max_value_bytes} bytes (MCPACTOR_SQLITE_MAX_RESULT_BYTES): "
                "cut long values with substr() or leave them out"
            )
        if "too many columns in result set" in str(exc):
            return ToolError(
                f"the query failed: more than {MAX_COLUMNS} columns in the result; "
                "name the columns you need"
            )
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
def open_guarded(
    path: str, timeout: float, *, max_value_bytes: int, guard: Guard | None = None
) -> Iterator[tuple[sqlite3.Connection, Guard]]:
    """Open ``path`` read-only with the guards and limits installed; close it on exit.

    ``guard``, when given, is the one another thread may ``stop`` the statement with.
    """
    if guard is None:
        guard = Guard(timeout, max_value_bytes=max_value_bytes)
    try:
        connection = sqlite3.connect(
            database_uri(path), uri=True, isolation_level=None, timeout=min(timeout, 5.0)
        )
    except sqlite3.Error as exc:
        raise ToolError(f"cannot open the database {path!r}: {exc}") from None
    try:
        connection.execute("PRAGMA query_only = ON")
        connection.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, MAX_SQL_BYTES)
        connection.setlimit(sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, MAX_PATTERN_BYTES)
        connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        try:
            # Read the schema first: a table wider than the column limit, or a long
            # CREATE statement, is then known, and only what queries read and make is
            # held to the limits.
            connection.execute("SELECT 1 FROM sqlite_master LIMIT 0").fetchall()
        except sqlite3.Error as exc:
            raise ToolError(f"cannot read the database {path!r}: {exc}") from None
        connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max_value_bytes)
        connection.setlimit(sqlite3.SQLITE_LIMIT_COLUMN, MAX_COLUMNS)
        connection.set_authorizer(guard.authorize)
        connection.set_progress_handler(guard.progress, PROGRESS_STEPS)
        guard.attach(connection)
        try:
            yield connection, guard
        finally:
            guard.detach()
    finally:
        connection.close()
