"""An MCP server for read-only SQL over one SQLite database.

Queries are bounded in rows, bytes and time, and stop the moment their request is
cancelled; anything but a single read statement is refused (see ``_readonly.py``).
"""

from __future__ import annotations

import base64
import json
import os
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypedDict, TypeVar

import orjson
import trio

from mcpactor import Context, RequestError, Server, ToolAnnotations, ToolError

from ._readonly import MAX_SQL_BYTES, Guard, open_guarded

__all__ = [
    "Column",
    "QueryResult",
    "SqliteConfig",
    "TableSchema",
    "configure",
    "server",
]
__version__ = "0.1.0"

_INVALID_PARAMS: Final = -32602
_DEFAULT_MAX_ROWS: Final = 1000
_DEFAULT_TIMEOUT: Final = 10.0
_DEFAULT_MAX_RESULT_BYTES: Final = 1 << 20
#: rows fetched from SQLite at a time, between two looks at the result's size
_FETCH_ROWS: Final = 64
#: queries running at once, each in a worker thread with its own connection
_MAX_RUNNING: Final = 4

T = TypeVar("T")

Scalar = str | int | float | bool | None

server = Server(
    "sqlite",
    version=__version__,
    title="SQLite",
    instructions=(
        "Read-only SQL over one SQLite database. The resource sqlite://tables lists the "
        "tables, sqlite://tables/{table}/schema describes one. Results are capped in rows, "
        "bytes and time: add WHERE and LIMIT clauses rather than reading whole tables."
    ),
)


# --- configuration -----------------------------------------------------------------------


@dataclass(frozen=True)
class SqliteConfig:
    """The sqlite server's settings."""

    #: the database file, or None when none is configured
    database: str | None = None
    #: rows one query returns at most
    max_rows: int = _DEFAULT_MAX_ROWS
    #: seconds one query may run
    timeout: float = _DEFAULT_TIMEOUT
    #: bytes of JSON one result holds at most; also the longest value a query may make
    #: or read (SQLite's length limit)
    max_result_bytes: int = _DEFAULT_MAX_RESULT_BYTES


_config = SqliteConfig()


def configure(
    database: str | os.PathLike[str] | None = None,
    *,
    max_rows: int | None = None,
    timeout: float | None = None,
    max_result_bytes: int | None = None,
) -> SqliteConfig:
    """Set the database and limits; what is not given comes from the environment.

    ``MCPACTOR_SQLITE_DB`` (the database file), ``MCPACTOR_SQLITE_MAX_ROWS`` (default
    1000), ``MCPACTOR_SQLITE_TIMEOUT`` (seconds, default 10) and
    ``MCPACTOR_SQLITE_MAX_RESULT_BYTES`` (default 1 MiB).

    Raises:
        ValueError: a limit is not a positive number.
    """
    global _config
    if database is None:
        database = os.environ.get("MCPACTOR_SQLITE_DB") or None
    try:
        if max_rows is None:
            max_rows = int(os.environ.get("MCPACTOR_SQLITE_MAX_ROWS", _DEFAULT_MAX_ROWS))
        if timeout is None:
            timeout = float(os.environ.get("MCPACTOR_SQLITE_TIMEOUT", _DEFAULT_TIMEOUT))
        if max_result_bytes is None:
            max_result_bytes = int(
                os.environ.get("MCPACTOR_SQLITE_MAX_RESULT_BYTES", _DEFAULT_MAX_RESULT_BYTES)
            )
    except ValueError as exc:
        raise ValueError(
            "MCPACTOR_SQLITE_MAX_ROWS, MCPACTOR_SQLITE_TIMEOUT or "
            f"MCPACTOR_SQLITE_MAX_RESULT_BYTES: {exc}"
        ) from None
    if max_rows < 1:
        raise ValueError(f"max_rows must be at least 1, got {max_rows!r}")
    if not timeout > 0:
        raise ValueError(f"timeout must be more than 0 seconds, got {timeout!r}")
    if max_result_bytes < 1024:
        raise ValueError(f"max_result_bytes must be at least 1024, got {max_result_bytes!r}")
    path = os.path.abspath(os.fspath(database)) if database is not None else None
    _config = SqliteConfig(
        database=path, max_rows=max_rows, timeout=timeout, max_result_bytes=max_result_bytes
    )
    return _config


def _database() -> str:
    database = _config.database
    if database is None:
        raise ToolError("no database is configured: set MCPACTOR_SQLITE_DB")
    return database


# --- queries -------------------------------------------------------------------------------


class QueryResult(TypedDict):
    """What a query returned; blobs are ``{"blob": base64, "size": bytes}``."""

    columns: list[str]
    rows: list[list[Any]]
    #: True when the query had more rows than the server returns
    truncated: bool


def _json_value(value: Any) -> Any:
    if isinstance(value, bytes):
        return {"blob": base64.b64encode(value).decode("ascii"), "size": len(value)}
    return value


def _too_large(limit: int, rows: int) -> ToolError:
    return ToolError(
        f"the result is more than the limit of {limit} bytes "
        f"(MCPACTOR_SQLITE_MAX_RESULT_BYTES) after {rows} rows: ask for fewer rows or "
        "columns (LIMIT, WHERE), or cut long values with substr()"
    )


def _run(
    sql: str,
    params: Sequence[Scalar] | Mapping[str, Scalar],
    max_rows: int,
    guard: Guard | None = None,
) -> tuple[list[str], list[list[Any]], bool]:
    config = _config
    limit = config.max_result_bytes
    size = len(sql.encode("utf-8", "surrogatepass"))
    if size > MAX_SQL_BYTES:
        raise ToolError(f"the query is {size} bytes, more than the limit of {MAX_SQL_BYTES}")
    rows: list[list[Any]] = []
    # Counted as rows arrive, so an answer over the limit is never built whole.
    used = 0
    truncated = False
    with open_guarded(_database(), config.timeout, max_value_bytes=limit, guard=guard) as (
        connection,
        guard,
    ):
        try:
            cursor = connection.execute(sql, params)
            columns = [column[0] for column in cursor.description or ()]
            while not truncated:
                batch = cursor.fetchmany(min(_FETCH_ROWS, max_rows + 1 - len(rows)))
                if not batch:
                    break
                for raw in batch:
                    if len(rows) == max_rows:
                        truncated = True
                        break
                    row = [_json_value(v) for v in raw]
                    used += len(orjson.dumps(row)) + 1
                    if used > limit:
                        raise _too_large(limit, len(rows))
                    rows.append(row)
        except (sqlite3.Error, sqlite3.Warning) as exc:
            raise guard.explain(exc) from None
    return columns, rows, truncated


async def _interruptible(work: Callable[[Guard], T], timeout: float) -> T:
    """Run ``work`` in a worker thread; interrupt its statement at the deadline or when
    the request is cancelled, rather than wait for SQLite's next progress callback."""
    guard = Guard(timeout, max_value_bytes=_config.max_result_bytes)
    finished = False

    async def watch() -> None:
        try:
            await trio.sleep(timeout)
            guard.stop("timeout")
        finally:
            if not finished:
                guard.stop("cancelled")

    done: list[T] = []

    def capture() -> Exception | None:
        # The work's own error is raised outside the nursery, not inside a group.
        try:
            done.append(work(guard))
        except Exception as exc:
            return exc
        return None

    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch)
        try:
            # The thread is never abandoned: a stop makes it return promptly.
            error = await trio.to_thread.run_sync(capture, limiter=_limiter())
        finally:
            finished = True
            nursery.cancel_scope.cancel()
    if error is not None:
        raise error
    return done[0]


_running: trio.CapacityLimiter | None = None


def _limiter() -> trio.CapacityLimiter:
    global _running
    if _running is None:
        _running = trio.CapacityLimiter(_MAX_RUNNING)
    return _running


_READ_ONLY: Final = ToolAnnotations(
    read_only_hint=True, idempotent_hint=True, open_world_hint=False
)


@server.tool(annotations=_READ_ONLY)
async def query(sql: str, params: list[Scalar] | dict[str, Scalar] | None = None) -> QueryResult:
    """Run one read-only SQL statement (SELECT, WITH, VALUES, EXPLAIN, PRAGMA table_info…).

    Writes, ATTACH, setting PRAGMAs and functions a read has no use for are refused.
    Rows, bytes and run time are capped.

    Args:
        sql: a single SQL statement; use ? or :name placeholders for values
        params: values for the placeholders: a list for ?, an object for :name
    """
    if not sql.strip():
        raise ToolError("the query is empty")
    config = _config

    def work(guard: Guard) -> tuple[list[str], list[list[Any]], bool]:
        return _run(sql, params or [], config.max_rows, guard)

    columns, rows, truncated = await _interruptible(work, config.timeout)
    return {"columns": columns, "rows": rows, "truncated": truncated}


# --- schema ---------------------------------------------------------------------------------


class Column(TypedDict):
    """One column of a table."""

    name: str
    type: str
    not_null: bool
    default: str | None
    primary_key: bool


class TableSchema(TypedDict):
    """A table or view: its SQL and columns."""

    name: str
    type: str
    sql: str | None
    columns: list[Column]


_TABLES_SQL: Final = (
    "SELECT name, type FROM sqlite_master "
    "WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"
)


def _tables() -> list[dict[str, str]]:
    columns, rows, _ = _run(_TABLES_SQL, [], 100_000)
    return [dict(zip(columns, row, strict=True)) for row in rows]


def _schema(table: str) -> TableSchema | None:
    _, found, _ = _run(
        "SELECT name, type, sql FROM sqlite_master WHERE name = ? AND type IN ('table', 'view')",
        [table],
        1,
    )
    if not found:
        return None
    name, kind, sql = found[0]
    _, rows, _ = _run(
        'SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?)', [name], 10_000
    )
    columns: list[Column] = [
        {
            "name": column,
            "type": kind_of,
            "not_null": bool(not_null),
            "default": default,
            "primary_key": bool(pk),
        }
        for column, kind_of, not_null, default, pk in rows
    ]
    return {"name": name, "type": kind, "sql": sql, "columns": columns}


def _known_schema(table: str, ctx: Context, *, for_resource: bool) -> TableSchema:
    try:
        schema = _schema(table)
    except ToolError as exc:
        raise RequestError(-32603, str(exc)) from None
    if schema is None:
        code = ctx.negotiated.revision.resource_not_found_code if for_resource else _INVALID_PARAMS
        raise RequestError(code, f"no table or view named {table!r}", {"table": table})
    return schema


@server.resource("sqlite://tables", name="tables", title="Tables", mime_type="application/json")
def list_tables() -> str:
    """The tables and views of the database (name and type), as JSON."""
    try:
        return json.dumps(_tables())
    except ToolError as exc:
        raise RequestError(-32603, str(exc)) from None


@server.resource(
    "sqlite://tables/{table}/schema",
    name="table-schema",
    title="Table schema",
    mime_type="application/json",
)
def table_schema(table: str, ctx: Context) -> str:
    """A table's CREATE statement and columns, as JSON."""
    return json.dumps(_known_schema(table, ctx, for_resource=True))


# --- prompts and completion ------------------------------------------------------------------


def _columns_text(schema: TableSchema) -> str:
    return "\n".join(
        f"- {c['name']} {c['type'] or '(no type)'}"
        + (" PRIMARY KEY" if c["primary_key"] else "")
        + (" NOT NULL" if c["not_null"] else "")
        for c in schema["columns"]
    )


@server.prompt(title="Explore a table")
def explore_table(table: str, ctx: Context) -> str:
    """Get to know a table: size, typical values, keys and relations.

    Args:
        table: the table or view to explore
    """
    schema = _known_schema(table, ctx, for_resource=False)
    return (
        f"Explore the SQLite {schema['type']} {table!r} with the query tool. Its columns:\n"
        f"{_columns_text(schema)}\n\n"
        "1. Count its rows.\n"
        "2. Show a few sample rows (use LIMIT).\n"
        "3. For each column: the share of NULLs, the number of distinct values, and the "
        "range or the most common values.\n"
        "4. Find likely keys and columns that refer to other tables.\n"
        "Then summarise what the table holds and what stands out. Keep every query "
        "bounded with LIMIT or aggregates."
    )


@server.prompt(title="Find anomalies in a column")
def find_anomalies(table: str, column: str, ctx: Context) -> str:
    """Look for outliers, odd values and gaps in one column of a table.

    Args:
        table: the table or view
        column: the column to examine
    """
    schema = _known_schema(table, ctx, for_resource=False)
    found = [c for c in schema["columns"] if c["name"] == column]
    if not found:
        names = ", ".join(c["name"] for c in schema["columns"])
        raise RequestError(
            _INVALID_PARAMS,
            f"{table!r} has no column {column!r}; its columns are {names}",
            {"table": table, "column": column},
        )
    declared = found[0]["type"] or "no declared type"
    return (
        f"Find anomalies in the column {column!r} ({declared}) of {table!r}, using the "
        "query tool with aggregate queries:\n"
        "- NULLs and empty strings, and how many;\n"
        "- values whose storage class differs from the rest (typeof());\n"
        "- for numbers: min, max, mean, and values far outside the interquartile range;\n"
        "- for text: unusual lengths, leading or trailing spaces, near-duplicate spellings;\n"
        "- duplicates where the column looks like it should be unique.\n"
        "Report each anomaly with a count and a few example rows (LIMIT 5)."
    )


def complete_table(value: str, context: dict[str, str]) -> list[str]:
    """Table and view names starting with ``value`` (case-insensitive)."""
    try:
        tables = _tables()
    except ToolError:
        return []
    prefix = value.lower()
    return [t["name"] for t in tables if t["name"].lower().startswith(prefix)]


@server.completion("find_anomalies", "column")
def complete_column(value: str, context: dict[str, str]) -> list[str]:
    """Columns of the table already chosen that start with ``value``."""
    table = context.get("table")
    if not table:
        return []
    try:
        schema = _schema(table)
    except ToolError:
        return []
    if schema is None:
        return []
    prefix = value.lower()
    return [c["name"] for c in schema["columns"] if c["name"].lower().startswith(prefix)]


server.completion("explore_table", "table")(complete_table)
server.completion("find_anomalies", "table")(complete_table)
server.completion("sqlite://tables/{table}/schema", "table")(complete_table)

configure()
