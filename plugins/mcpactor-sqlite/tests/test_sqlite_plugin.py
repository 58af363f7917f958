"""The sqlite server: read-only queries, bounded in rows and time, and its schema."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import sqlite3
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, Final

import mcpactor_sqlite
import pytest
import trio
import trio.lowlevel
import trio.testing
from mcpactor_sqlite import _readonly

import mcpactor.testing
from mcpactor import RequestError, check_cancelled
from mcpactor.client import ClientSession

# Long enough for every legitimate wait; a hang fails instead of blocking.
GUARD: Final = 10.0
# Never finishes on its own: only a cancellation or the deadline stops it.
ENDLESS: Final = (
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"
)


@pytest.fixture
def database(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "shop #1?.db"  # characters that mean something in a URI
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA synchronous = OFF")  # a test fixture need not survive a crash
    connection.executescript(
        """
        CREATE TABLE users (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            email TEXT,
            age INTEGER DEFAULT 0
        );
        CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES users(id),
                             amount REAL, receipt BLOB);
        CREATE VIEW adults AS SELECT * FROM users WHERE age >= 18;
        CREATE INDEX orders_by_user ON orders(user_id);
        """
    )
    connection.executemany(
        "INSERT INTO users (name, email, age) VALUES (?, ?, ?)",
        [(f"user{i}", f"user{i}@example.com" if i % 7 else None, i % 90) for i in range(1, 51)],
    )
    connection.execute("INSERT INTO orders (user_id, amount, receipt) VALUES (1, 9.5, x'00ff')")
    connection.commit()
    connection.close()
    mcpactor_sqlite.configure(path, max_rows=1000, timeout=10.0, max_result_bytes=1 << 20)
    yield path
    mcpactor_sqlite.configure(None, max_rows=1000, timeout=10.0, max_result_bytes=1 << 20)


@pytest.fixture
async def client(database: Path) -> AsyncIterator[ClientSession]:
    async with mcpactor.testing.client(mcpactor_sqlite.server) as session:
        yield session


async def query(client: ClientSession, sql: str, params: Any = None) -> dict[str, Any]:
    arguments: dict[str, Any] = {"sql": sql}
    if params is not None:
        arguments["params"] = params
    result = await client.call_tool("query", arguments)
    assert not result.get("isError"), result
    structured: dict[str, Any] = result["structuredContent"]
    return structured


async def refused(client: ClientSession, sql: str) -> str:
    result = await client.call_tool("query", {"sql": sql})
    assert result.get("isError") is True, result
    text: str = result["content"][0]["text"]
    return text


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_entry_point_names_the_server() -> None:
    [entry] = [
        ep
        for ep in importlib.metadata.entry_points(group="mcpactor.servers")
        if ep.name == "sqlite"
    ]
    assert entry.load() is mcpactor_sqlite.server


async def test_the_query_tool_is_listed(client: ClientSession) -> None:
    [tool] = await client.list_tools()
    assert tool["name"] == "query"
    assert tool["annotations"]["readOnlyHint"] is True
    assert tool["inputSchema"]["required"] == ["sql"]
    assert set(tool["outputSchema"]["properties"]) == {"columns", "rows", "truncated"}


# --- reading ---------------------------------------------------------------------------


async def test_a_query_returns_columns_and_rows(client: ClientSession) -> None:
    result = await query(client, "SELECT id, name, age FROM users WHERE id <= 2 ORDER BY id")
    assert result == {
        "columns": ["id", "name", "age"],
        "rows": [[1, "user1", 1], [2, "user2", 2]],
        "truncated": False,
    }


async def test_parameters_by_position_and_by_name(client: ClientSession) -> None:
    by_position = await query(client, "SELECT name FROM users WHERE id IN (?, ?)", [3, 4])
    assert by_position["rows"] == [["user3"], ["user4"]]
    by_name = await query(client, "SELECT name FROM users WHERE id = :id", {"id": 5})
    assert by_name["rows"] == [["user5"]]
    assert (await query(client, "SELECT ? IS NULL, ?", [None, 1.5]))["rows"] == [[1, 1.5]]


async def test_blobs_nulls_and_reals_are_json(client: ClientSession) -> None:
    result = await query(client, "SELECT amount, receipt, NULL AS missing FROM orders")
    assert result["rows"] == [[9.5, {"blob": "AP8=", "size": 2}, None]]


@pytest.mark.parametrize(
    "sql",
    [
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3) "
        "SELECT i FROM n",
        "VALUES (1), (2), (3)",
        "SELECT name FROM adults LIMIT 3",
        "EXPLAIN SELECT 1",
        "PRAGMA table_info(users)",
        "SELECT name FROM pragma_table_info('users')",
        "PRAGMA user_version",
        "SELECT 1 -- a comment\n;",
    ],
)
async def test_read_statements_are_allowed(client: ClientSession, sql: str) -> None:
    assert (await query(client, sql))["rows"]


async def test_rows_are_capped(client: ClientSession) -> None:
    mcpactor_sqlite.configure(mcpactor_sqlite._config.database, max_rows=10)
    capped = await query(client, "SELECT id FROM users ORDER BY id")
    assert capped["rows"] == [[i] for i in range(1, 11)]
    assert capped["truncated"] is True
    exact = await query(client, "SELECT id FROM users ORDER BY id LIMIT 10")
    assert exact["truncated"] is False
    assert len(exact["rows"]) == 10


# --- refusing ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        ("INSERT INTO users (name) VALUES ('mallory')", "INSERT (users)"),
        ("UPDATE users SET name = 'x'", "UPDATE (users)"),
        ("DELETE FROM users", "DELETE (users)"),
        ("DROP TABLE users", "changing the schema"),
        ("CREATE TABLE t (x)", "changing the schema"),
        ("CREATE TEMP TABLE t (x)", "changing the schema"),
        ("ALTER TABLE users ADD COLUMN y", "ALTER TABLE (main)"),
        ("ATTACH DATABASE 'other.db' AS other", "ATTACH (other.db)"),
        ("VACUUM INTO 'copy.db'", "ATTACH (copy.db)"),
        ("PRAGMA user_version = 7", "PRAGMA user_version = 7"),
        ("PRAGMA query_only = 0", "PRAGMA query_only = 0"),
        ("PRAGMA journal_mode = DELETE", "PRAGMA journal_mode = DELETE"),
        ("CREATE INDEX i ON users (name)", "changing the schema"),
        ("DROP VIEW adults", "changing the schema"),
        ("BEGIN", "TRANSACTION (BEGIN)"),
        ("SAVEPOINT a", "SAVEPOINT (BEGIN)"),
        ("SELECT load_extension('evil')", "the function load_extension()"),
        ("SELECT fts3_tokenizer('simple')", "the function fts3_tokenizer()"),
        ("SELECT sqlite_log(1, 'x')", "the function sqlite_log()"),
        ("SELECT name FROM users WHERE rtreenode(2, x'00') IS NULL", "the function rtreenode()"),
    ],
)
async def test_writes_and_their_kin_are_refused(
    client: ClientSession, database: Path, sql: str, named: str
) -> None:
    before = digest(database)
    message = await refused(client, sql)
    assert message == (
        f"refused: this server only runs read-only queries, and {named} is not allowed"
    )
    assert digest(database) == before
    # Nothing was created beside it either (ATTACH and VACUUM INTO create files).
    assert sorted(p.name for p in database.parent.iterdir()) == [database.name]


async def test_a_second_statement_is_refused(client: ClientSession) -> None:
    message = await refused(client, "SELECT 1; DROP TABLE users")
    assert message == "refused: send one statement at a time"
    assert (await query(client, "SELECT count(*) FROM users"))["rows"] == [[50]]


async def test_errors_are_explained(client: ClientSession) -> None:
    assert "the query failed: no such table: nope" in await refused(client, "SELECT * FROM nope")
    assert "syntax error" in await refused(client, "SELEC 1")
    assert await refused(client, "   ") == "the query is empty"


async def test_without_a_database_the_tool_says_how_to_configure_one(
    client: ClientSession, tmp_path: Path
) -> None:
    mcpactor_sqlite.configure(None)
    assert "set MCPACTOR_SQLITE_DB" in await refused(client, "SELECT 1")
    mcpactor_sqlite.configure(tmp_path / "missing.db")
    message = await refused(client, "SELECT 1")
    assert "cannot open the database" in message
    assert not (tmp_path / "missing.db").exists()  # read-only opens create nothing


def test_configure_reads_the_environment(monkeypatch: pytest.MonkeyPatch, database: Path) -> None:
    monkeypatch.setenv("MCPACTOR_SQLITE_DB", str(database))
    monkeypatch.setenv("MCPACTOR_SQLITE_MAX_ROWS", "5")
    monkeypatch.setenv("MCPACTOR_SQLITE_TIMEOUT", "2.5")
    monkeypatch.setenv("MCPACTOR_SQLITE_MAX_RESULT_BYTES", "65536")
    assert mcpactor_sqlite.configure() == mcpactor_sqlite.SqliteConfig(
        database=str(database), max_rows=5, timeout=2.5, max_result_bytes=65536
    )
    with pytest.raises(ValueError, match="max_result_bytes must be at least 1024"):
        mcpactor_sqlite.configure(max_result_bytes=10)
    with pytest.raises(ValueError, match="max_rows must be at least 1"):
        mcpactor_sqlite.configure(max_rows=0)
    with pytest.raises(ValueError, match="timeout must be more than 0"):
        mcpactor_sqlite.configure(timeout=0)
    monkeypatch.setenv("MCPACTOR_SQLITE_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="MCPACTOR_SQLITE_TIMEOUT"):
        mcpactor_sqlite.configure()


# --- time ------------------------------------------------------------------------------


async def test_a_long_query_stops_at_the_deadline(client: ClientSession) -> None:
    mcpactor_sqlite.configure(mcpactor_sqlite._config.database, timeout=0.2)
    start = time.monotonic()
    with trio.fail_after(GUARD):
        message = await refused(client, ENDLESS)
    assert message.startswith("the query was stopped after 0.2 s, the time limit")
    assert 0.2 <= time.monotonic() - start < GUARD


class Watch:
    """Wraps check_cancelled in the progress handler: says when the query runs and stops."""

    def __init__(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self.running = trio.Event()
        self.stopped = trio.Event()
        self.checks = 0

    def check(self) -> None:
        self.checks += 1
        if self.checks == 1:
            self._token.run_sync_soon(self.running.set)
        try:
            check_cancelled()
        except BaseException:
            self._token.run_sync_soon(self.stopped.set)
            raise


async def test_a_long_query_stops_when_its_request_is_cancelled(
    database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The deadline is far away: only the cancellation can stop the query in time.
    mcpactor_sqlite.configure(database, timeout=600)
    watch = Watch()
    monkeypatch.setattr(_readonly, "check_cancelled", watch.check)
    # One worker thread: holding its token proves the query's thread has finished.
    limiter = trio.CapacityLimiter(1)
    monkeypatch.setattr(mcpactor_sqlite, "_running", limiter)
    scope = trio.CancelScope()
    start = time.monotonic()
    async with mcpactor.testing.client(mcpactor_sqlite.server) as client:

        async def run() -> None:
            with scope:
                await client.call_tool("query", {"sql": ENDLESS})

        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            with trio.fail_after(GUARD):
                await watch.running.wait()
            scope.cancel()
            with trio.fail_after(GUARD):
                await watch.stopped.wait()
                async with limiter:
                    pass
        assert scope.cancelled_caught
        assert time.monotonic() - start < GUARD
        assert client.statistics().requests_pending == {}
        # The session carries on.
        assert (await query(client, "SELECT 1"))["rows"] == [[1]]


class Spin:
    """A progress handler that never stops the statement: it only says it runs."""

    def __init__(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self.running = trio.Event()
        self.calls = 0

    def progress(self) -> int:
        self.calls += 1
        if self.calls == 1:
            self._token.run_sync_soon(self.running.set)
        return 0


async def test_a_cancelled_query_is_interrupted_inside_sqlite(
    database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With the progress handler out of the way, only Connection.interrupt() can stop the
    # statement: the cancellation must reach it from outside the worker thread.
    mcpactor_sqlite.configure(database, timeout=600)
    spin = Spin()
    monkeypatch.setattr(_readonly.Guard, "progress", spin.progress)
    limiter = trio.CapacityLimiter(1)
    monkeypatch.setattr(mcpactor_sqlite, "_running", limiter)
    scope = trio.CancelScope()
    async with mcpactor.testing.client(mcpactor_sqlite.server) as client:

        async def run() -> None:
            with scope:
                await client.call_tool("query", {"sql": ENDLESS})

        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            with trio.fail_after(GUARD):
                await spin.running.wait()
            scope.cancel()
            with trio.fail_after(GUARD):
                async with limiter:  # the query's thread has returned
                    pass
        assert scope.cancelled_caught
        assert client.statistics().requests_pending == {}
        assert (await query(client, "SELECT 1"))["rows"] == [[1]]


async def test_the_deadline_interrupts_a_query_inside_sqlite(
    client: ClientSession, database: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spin = Spin()
    monkeypatch.setattr(_readonly.Guard, "progress", spin.progress)
    mcpactor_sqlite.configure(database, timeout=0.2)
    with trio.fail_after(GUARD):
        message = await refused(client, ENDLESS)
    assert message.startswith("the query was stopped after 0.2 s, the time limit")
    assert spin.calls > 0  # it ran, and the handler never stopped it


# --- size ------------------------------------------------------------------------------


async def test_results_are_bounded_in_bytes(client: ClientSession, database: Path) -> None:
    mcpactor_sqlite.configure(database, max_result_bytes=4096)
    rows = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 8) "
    small = await query(client, rows + "SELECT i, randomblob(100) FROM n")
    assert len(small["rows"]) == 8
    message = await refused(client, rows + "SELECT i, randomblob(1000) FROM n")
    assert message.startswith(
        "the result is more than the limit of 4096 bytes (MCPACTOR_SQLITE_MAX_RESULT_BYTES) "
        "after 3 rows: ask for fewer rows or columns"
    )
    # Text counts as written: a character escaped in JSON takes its escape's bytes.
    message = await refused(client, "SELECT replace(printf('%.*c', 800, 'x'), 'x', char(1))")
    assert "more than the limit of 4096 bytes" in message


async def test_printf_stops_at_the_length_limit(client: ClientSession, database: Path) -> None:
    # One step, seconds of work past any deadline without the limit; SQLite's printf()
    # gives up at the limit and returns NULL.
    mcpactor_sqlite.configure(database, timeout=600, max_result_bytes=1 << 20)
    found = await query(client, "SELECT printf('%.*c', 40000000, 'x')")
    assert found["rows"] == [[None]]


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT length(zeroblob(1000000000))",
        "SELECT length(randomblob(100000000))",
        "SELECT length(replace(printf('%.*c', 4000, 'x'), 'x', printf('%.*c', 4000, 'y')))",
        "WITH RECURSIVE s(v) AS (SELECT 'x' UNION ALL SELECT v || v FROM s) "
        "SELECT length(v) FROM s",
        "SELECT length(group_concat(printf('%.*c', 1000, 'x'))) FROM users, users",
    ],
)
async def test_values_are_bounded_by_sqlites_length_limit(
    client: ClientSession, database: Path, sql: str
) -> None:
    # The deadline is far away: the limit refuses the value, not the clock.
    mcpactor_sqlite.configure(database, timeout=600, max_result_bytes=1 << 20)
    message = await refused(client, sql)
    assert message == (
        "a value of the query is more than the limit of 1048576 bytes "
        "(MCPACTOR_SQLITE_MAX_RESULT_BYTES): cut long values with substr() or leave them out"
    )


async def test_rows_are_bounded_in_columns(client: ClientSession, database: Path) -> None:
    # Each column can hold a value up to the length limit: the width bounds a row.
    wide = "WITH x(v) AS (SELECT 1) SELECT " + ", ".join(["v"] * 300) + " FROM x"
    message = await refused(client, wide)
    assert message.startswith("the query failed: more than 256 columns in the result")
    # A table wider than that still opens; its columns are read by name.
    connection = sqlite3.connect(database)
    columns = ", ".join(f"c{i}" for i in range(300))
    connection.execute(f"CREATE TABLE wide ({columns})")
    connection.execute("INSERT INTO wide (c0, c299) VALUES (1, 2)")
    connection.commit()
    connection.close()
    assert (await query(client, "SELECT c0, c299 FROM wide"))["rows"] == [[1, 2]]


async def test_a_query_longer_than_the_limit_is_refused_before_it_runs(
    client: ClientSession,
) -> None:
    sql = "SELECT 1 " + " " * _readonly.MAX_SQL_BYTES
    message = await refused(client, sql)
    assert message == f"the query is {len(sql)} bytes, more than the limit of 1048576"


# --- functions -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT abs(-2), coalesce(NULL, 3), upper('a'), substr('abc', 2)", [2, 3, "A", "bc"]),
        ("SELECT json_extract('{\"a\": 1}', '$.a'), '{\"a\": 2}' ->> 'a'", [1, 2]),
        (
            "SELECT date('2024-01-31', '+1 day'), strftime('%Y', '2024-05-01')",
            ["2024-02-01", "2024"],
        ),
        ("SELECT count(*), group_concat(id) FROM users WHERE id < 3", [2, "1,2"]),
        ("SELECT row_number() OVER (ORDER BY id) FROM users WHERE id = 7", [1]),
        ("SELECT typeof(1.5), round(2.567, 1), printf('%05d', 42)", ["real", 2.6, "00042"]),
    ],
)
async def test_the_functions_a_read_needs_are_allowed(
    client: ClientSession, sql: str, expected: list[Any]
) -> None:
    assert (await query(client, sql))["rows"] == [expected]


async def test_full_text_search_works_and_its_native_functions_do_not(tmp_path: Path) -> None:
    path = tmp_path / "docs.db"
    connection = sqlite3.connect(path)
    connection.execute("CREATE VIRTUAL TABLE docs USING fts5(body)")
    connection.execute("INSERT INTO docs VALUES ('the quick brown fox'), ('lazy dogs')")
    connection.commit()
    connection.close()
    mcpactor_sqlite.configure(path)
    async with mcpactor.testing.client(mcpactor_sqlite.server) as client:
        found = await query(
            client,
            "SELECT highlight(docs, 0, '[', ']'), bm25(docs) < 1 FROM docs WHERE docs MATCH 'fox'",
        )
        assert found["rows"] == [["the quick brown [fox]", 1]]
        for function in ("fts5(NULL)", "fts5_source_id()", "optimize(docs)"):
            message = await refused(client, f"SELECT {function} FROM docs")
            assert message.endswith(f"the function {function.split('(')[0]}() is not allowed")


def test_the_allowed_functions_are_all_read_only() -> None:
    # Whatever this SQLite has beyond the list stays refused; the list names nothing that
    # reaches outside the statement.
    assert _readonly.ALLOWED_FUNCTIONS.isdisjoint(
        {"load_extension", "fts3_tokenizer", "fts5", "sqlite_log", "optimize", "rtreenode",
         "readfile", "writefile", "edit", "sqlite_dbpage"}
    )  # fmt: skip


# --- schema resources, prompts, completion -----------------------------------------------


async def test_the_tables_resource(client: ClientSession) -> None:
    uris = [r["uri"] for r in await client.list_resources()]
    assert uris == ["sqlite://tables"]
    [content] = (await client.read_resource("sqlite://tables"))["contents"]
    assert json.loads(content["text"]) == [
        {"name": "adults", "type": "view"},
        {"name": "orders", "type": "table"},
        {"name": "users", "type": "table"},
    ]


async def test_the_schema_resource(client: ClientSession) -> None:
    [content] = (await client.read_resource("sqlite://tables/users/schema"))["contents"]
    schema = json.loads(content["text"])
    assert schema["name"] == "users"
    assert schema["type"] == "table"
    assert schema["sql"].startswith("CREATE TABLE users")
    assert schema["columns"][0] == {
        "name": "id",
        "type": "INTEGER",
        "not_null": False,
        "default": None,
        "primary_key": True,
    }
    assert schema["columns"][3]["default"] == "0"
    with pytest.raises(RequestError) as info:
        await client.read_resource("sqlite://tables/nope/schema")
    assert info.value.code == -32002
    assert "no table or view named 'nope'" in info.value.message


async def test_the_analysis_prompts(client: ClientSession) -> None:
    names = {prompt["name"] for prompt in await client.list_prompts()}
    assert names == {"explore_table", "find_anomalies"}
    explore = await client.get_prompt("explore_table", {"table": "users"})
    text = explore["messages"][0]["content"]["text"]
    assert "Explore the SQLite table 'users'" in text
    assert "- id INTEGER PRIMARY KEY" in text
    assert "- name TEXT NOT NULL" in text

    anomalies = await client.get_prompt("find_anomalies", {"table": "users", "column": "age"})
    text = anomalies["messages"][0]["content"]["text"]
    assert "the column 'age' (INTEGER) of 'users'" in text

    with pytest.raises(RequestError) as info:
        await client.get_prompt("explore_table", {"table": "nope"})
    assert info.value.code == -32602
    with pytest.raises(RequestError) as info:
        await client.get_prompt("find_anomalies", {"table": "users", "column": "nope"})
    assert "its columns are id, name, email, age" in info.value.message


async def test_table_and_column_names_complete(client: ClientSession) -> None:
    async def complete(ref: dict[str, str], name: str, value: str, **context: str) -> list[str]:
        result = await client.complete(ref, {"name": name, "value": value}, context or None)
        values: list[str] = result["completion"]["values"]
        return values

    explore = {"type": "ref/prompt", "name": "explore_table"}
    assert await complete(explore, "table", "") == ["adults", "orders", "users"]
    assert await complete(explore, "table", "OR") == ["orders"]
    template = {"type": "ref/resource", "uri": "sqlite://tables/{table}/schema"}
    assert await complete(template, "table", "u") == ["users"]
    anomalies = {"type": "ref/prompt", "name": "find_anomalies"}
    assert await complete(anomalies, "table", "a") == ["adults"]
    assert await complete(anomalies, "column", "e", table="users") == ["email"]
    assert await complete(anomalies, "column", "") == []  # no table chosen yet
    assert await complete(anomalies, "column", "", table="nope") == []
