"""Attack probe: tool arguments against the bundled fs, sqlite and memory plugins.

fs: every way out of the root (``..``, absolute paths, symlinks to the outside, to
``/etc``, to ``/dev/zero`` and ``/proc``, a FIFO, NUL, paths too long or too deep,
``file://`` URIs, client roots that try to widen the root). sqlite: every way to write
or reach the outside (PRAGMA, ATTACH, VACUUM INTO, DML and DDL, native functions) and
every way to run long or big (recursive CTEs, printf, blobs, wide results). memory:
floods of entities, observations and words, and a graph past its byte limits. Each
case names the refusal it expects and that the secret outside the root never comes back.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from typing import Any

import orjson
import pytest
import trio

from ._probe import (
    SECRET,
    Reply,
    Served,
    answer,
    call_tool,
    initialize_message,
    open_session,
    ping,
    post,
    sse_messages,
    streamed,
    tool_text,
)


async def _tool(served: Served, name: str, **arguments: Any) -> Any:
    session = await open_session(served)
    return await call_tool(served, session, name, arguments)


def _refused(response: Any, *words: str) -> str:
    # A tool's refusal: isError with a text naming why, and never the secret.
    result = response["result"]
    assert result.get("isError") is True, response
    text = tool_text(response)
    for word in words:
        assert word in text, text
    assert SECRET not in orjson.dumps(response).decode()
    return text


# --- fs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "../outside/secret.txt",
        "docs/../../outside/secret.txt",
        "/etc/passwd",
        "escape/secret.txt",
        "secret-link",
        "etc-link/passwd",
        "up/outside/secret.txt",
        "zero",
        "environ",
        "/proc/self/environ",
        "/dev/zero",
        "file:///etc/passwd",
        "file://localhost/etc/passwd",
        "file:///tmp/../etc/passwd",
    ],
)
async def test_fs_read_refuses_every_path_out_of_the_root(served: Served, path: str) -> None:
    with trio.fail_after(5):
        response = await _tool(served, "fs_read", path=path)
    _refused(response, "outside")


async def test_fs_read_of_a_fifo_in_the_root_is_refused_without_hanging(served: Served) -> None:
    with trio.fail_after(5):
        response = await _tool(served, "fs_read", path="pipe")
    _refused(response, "not a regular file")


@pytest.mark.parametrize(
    ("path", "words"),
    [
        pytest.param("hello.txt\x00/../../outside/secret.txt", "NUL", id="nul"),
        pytest.param("a/" * 300_000, "longer than", id="600-kb"),
        pytest.param("a/" * 1000, "components", id="1000-deep"),
        pytest.param("file://evil.example/etc/passwd", "not a local file", id="remote-uri"),
    ],
)
async def test_fs_paths_that_cannot_be_paths_are_refused_at_once(
    served: Served, path: str, words: str
) -> None:
    with trio.fail_after(3):
        response = await _tool(served, "fs_read", path=path)
    _refused(response, words)


async def test_fs_list_and_stat_do_not_follow_symlinks_out(served: Served) -> None:
    session = await open_session(served)
    listing = await call_tool(served, session, "fs_list", {"path": "."})
    entries = {e["name"]: e["type"] for e in listing["result"]["structuredContent"]["entries"]}
    assert entries["escape"] == "symlink"
    assert entries["zero"] == "symlink"
    for path in ("escape", "etc-link", "up"):
        _refused(await call_tool(served, session, "fs_list", {"path": path}), "outside")
        _refused(await call_tool(served, session, "fs_stat", {"path": path + "/x"}), "outside")


async def test_fs_search_finds_nothing_behind_a_symlink(served: Served) -> None:
    response = await _tool(served, "fs_search", pattern="*", contains="secret")
    assert response["result"].get("isError") is not True, response
    assert SECRET not in orjson.dumps(response).decode()
    paths = [m["path"] for m in response["result"]["structuredContent"]["matches"]]
    assert all(str(served.outside) not in path for path in paths)
    _refused(await _tool(served, "fs_search", path="escape"), "outside")
    _refused(await _tool(served, "fs_search", pattern="*" * 5000), "limit")


@pytest.mark.parametrize(
    "uri",
    [
        "file:///etc/passwd",
        "file:///{root}/../outside/secret.txt",
        "file:///{root}/escape/secret.txt",
        "file:///{root}/%2e%2e/outside/secret.txt",
        "file:///proc/self/environ",
    ],
)
async def test_fs_resources_out_of_the_root_are_32602(served: Served, uri: str) -> None:
    session = await open_session(served)
    uri = uri.replace("/{root}", str(served.root))
    message = {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}}
    response = answer(await post(served, message, session), 1)
    assert response["error"]["code"] in (-32602, -32002), response
    assert SECRET not in orjson.dumps(response).decode()


async def test_fs_completion_offers_nothing_out_of_the_root(served: Served) -> None:
    session = await open_session(served)
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "completion/complete",
        "params": {
            "ref": {"type": "ref/resource", "uri": "file://{+path}"},
            "argument": {"name": "path", "value": f"{served.root}/escape/"},
        },
    }
    response = answer(await post(served, message, session), 1)
    values = response["result"]["completion"]["values"]
    assert not any("secret" in value for value in values), values


async def _call_answering_roots(
    served: Served, session: str, path: str, roots: list[dict[str, str]]
) -> Any:
    # Call fs_read; answer the roots/list it asks on the way with ``roots``.
    call = {
        "jsonrpc": "2.0",
        "id": "read",
        "method": "tools/call",
        "params": {"name": "fs_read", "arguments": {"path": path}},
    }
    async with streamed(served, call, session, until=b'"roots/list"') as stream:
        await stream.wait_for(b"\n\n", timeout=5)
        asked = next(
            message
            for message in sse_messages(_partial(stream.data))
            if message.get("method") == "roots/list"
        )
        reply = {"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": roots}}
        assert (await post(served, reply, session)).status == 202
        finished = await stream.finish()
    return answer(finished, "read")


def _partial(data: bytes) -> Any:
    # The SSE events that have come so far, as a Reply's body (chunked framing removed).
    body = data.partition(b"\r\n\r\n")[2]
    text = re.sub(rb"\r\n[0-9a-f]+\r\n", b"", b"\r\n" + body)
    return Reply(200, {"content-type": "text/event-stream"}, text)


async def test_client_roots_can_narrow_the_root_never_widen_it(served: Served) -> None:
    reply = await post(served, initialize_message(roots={"listChanged": True}), None)
    session = reply.headers["mcp-session-id"]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await post(served, initialized, session)).status == 202
    everything = [{"uri": "file:///", "name": "everything"}]
    outside = await _call_answering_roots(
        served, session, str(served.outside / "secret.txt"), everything
    )
    _refused(outside, "outside")
    inside = await _call_answering_roots(served, session, "hello.txt", everything)
    assert tool_text(inside) == "hello\n"


# --- sqlite ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "words"),
    [
        ("PRAGMA writable_schema = 1", "PRAGMA writable_schema"),
        ("PRAGMA query_only = 0", "PRAGMA query_only"),
        ("PRAGMA journal_mode = DELETE", "PRAGMA journal_mode"),
        ("ATTACH DATABASE '{directory}/attached.sqlite' AS a", "not allowed"),
        ("VACUUM INTO '{directory}/copy.sqlite'", "not allowed"),
        ("INSERT INTO items (name) VALUES ('x')", "not allowed"),
        ("UPDATE items SET name = 'x'", "not allowed"),
        ("DELETE FROM items", "not allowed"),
        ("DROP TABLE items", "not allowed"),
        ("CREATE TABLE t (a)", "not allowed"),
        ("CREATE TEMP TABLE t AS SELECT 1", "not allowed"),
        ("SELECT load_extension('/tmp/x')", "load_extension"),
        ("SELECT fts3_tokenizer('simple')", "fts3_tokenizer"),
        ("SELECT sqlite_log(1, 'x')", "not allowed"),
        ("SELECT 1; DELETE FROM items", "one statement"),
        ("REINDEX", "not allowed"),
        ("ANALYZE", "not allowed"),
    ],
)
async def test_sqlite_refuses_every_write_and_native_function(
    served: Served, sql: str, words: str
) -> None:
    directory = served.database.parent
    response = await _tool(served, "sqlite_query", sql=sql.format(directory=directory))
    _refused(response, words)
    assert not (directory / "attached.sqlite").exists()
    assert not (directory / "copy.sqlite").exists()
    with contextlib.closing(sqlite3.connect(served.database)) as connection:
        assert connection.execute("SELECT count(*) FROM items").fetchone() == (100,)


@pytest.mark.parametrize(
    ("sql", "words"),
    [
        pytest.param(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
            "SELECT count(*) FROM n",
            "time limit",
            id="endless-cte",
        ),
        pytest.param("SELECT printf('%.*c', 40000000, 'x') IS NULL AS cut", None, id="printf"),
        pytest.param("SELECT randomblob(2000000000)", "limit", id="randomblob"),
        pytest.param("SELECT zeroblob(2000000000)", "limit", id="zeroblob"),
        pytest.param("SELECT replace(hex(zeroblob(600000)), '0', 'ab')", "limit", id="replace"),
        pytest.param(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 300000) "
            "SELECT group_concat('xxxxxxxxxx') FROM n",
            "limit",
            id="group-concat",
        ),
        pytest.param("SELECT zeroblob(100000) FROM items", "limit", id="wide-rows"),
        pytest.param("SELECT a.data, b.data FROM items a, items b", None, id="cross-join"),
        pytest.param("SELECT 'x' LIKE '" + "%_" * 20_000 + "'", "failed", id="like-pattern"),
    ],
)
async def test_sqlite_stops_what_runs_long_or_big(
    served: Served, sql: str, words: str | None
) -> None:
    # Refused with ``words``, or (None) answered within the row and byte limits: a value
    # past SQLite's length limit is NULL (printf), rows past the row limit are cut.
    with trio.fail_after(6):
        response = await _tool(served, "sqlite_query", sql=sql)
    if words is None:
        result = response["result"]["structuredContent"]
        assert len(result["rows"]) <= 1000
        assert result["rows"] != [[0]], result
        assert len(orjson.dumps(response)) < (1 << 20) * 3
    else:
        _refused(response, words)
        assert len(orjson.dumps(response)) < 10_000


async def test_concurrent_sqlite_bombs_leave_the_server_answering(served: Served) -> None:
    session = await open_session(served)
    bomb = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"
    outcomes: list[Any] = []
    async with trio.open_nursery() as nursery:

        async def one(request_id: int) -> None:
            outcomes.append(
                await call_tool(served, session, "sqlite_query", {"sql": bomb}, request_id)
            )

        for n in range(10):
            nursery.start_soon(one, n)
        await trio.sleep(0.2)
        with trio.fail_after(1):
            await ping(served, session)
    assert len(outcomes) == 10
    for response in outcomes:
        _refused(response, "time limit")


# --- memory ----------------------------------------------------------------------------


def _entity(name: str, *observations: str) -> dict[str, Any]:
    return {"name": name, "entityType": "probe", "observations": list(observations)}


async def test_memory_refuses_more_values_than_a_batch(served: Served) -> None:
    entities = [_entity(f"flood-{n}") for n in range(1001)]
    _refused(await _tool(served, "memory_create_entities", entities=entities), "limit")


async def test_memory_refuses_a_value_over_its_byte_limit(served: Served) -> None:
    _refused(
        await _tool(served, "memory_create_entities", entities=[_entity("big", "é" * 5000)]),
        "bytes",
    )
    _refused(
        await _tool(served, "memory_create_entities", entities=[_entity("n" * 9000)]), "bytes"
    )


async def test_memory_takes_many_observations_of_one_entity_in_linear_time(
    served: Served,
) -> None:
    session = await open_session(served)
    name = "notes"
    await call_tool(served, session, "memory_create_entities", {"entities": [_entity(name)]})
    with trio.fail_after(10):
        for round_ in range(5):
            contents = [f"note {round_}-{n}" for n in range(999)]
            response = await call_tool(
                served,
                session,
                "memory_add_observations",
                {"observations": [{"entityName": name, "contents": contents}]},
            )
            assert response["result"].get("isError") is not True, response


async def test_memory_search_of_too_many_words_is_refused(served: Served) -> None:
    _refused(
        await _tool(served, "memory_search_nodes", query=" ".join(f"w{n}" for n in range(17))),
        "words",
    )


async def test_memory_keeps_names_with_control_characters_exactly(served: Served) -> None:
    session = await open_session(served)
    name = "line\r\nWARNING forged\x1b[31m\u202e"
    await call_tool(served, session, "memory_create_entities", {"entities": [_entity(name, "x")]})
    opened = await call_tool(served, session, "memory_open_nodes", {"names": [name]})
    assert [e["name"] for e in opened["result"]["structuredContent"]["entities"]] == [name]


async def test_memory_answers_and_graph_are_held_to_their_byte_limits(served: Served) -> None:
    # The probe sets 256 KiB per answer and 2 MiB per graph: past them, refusals that
    # change nothing, and the answers stay small.
    session = await open_session(served)
    note = "o" * 4000
    for part in range(3):
        entities = [_entity(f"bulk-{part}-{n}", note) for n in range(100)]
        await call_tool(served, session, "memory_create_entities", {"entities": entities})
    graph = await call_tool(served, session, "memory_read_graph", {})
    _refused(graph, "MCPACTOR_MEMORY_MAX_RESULT_BYTES")
    refused = None
    for part in range(3, 12):
        entities = [_entity(f"bulk-{part}-{n}", note) for n in range(200)]
        response = await call_tool(
            served, session, "memory_create_entities", {"entities": entities}
        )
        if response["result"].get("isError"):
            refused = response
            break
    assert refused is not None, "the graph grew past its limit"
    _refused(refused, "MCPACTOR_MEMORY_MAX_GRAPH_BYTES", "nothing was changed")
    opened = await call_tool(served, session, "memory_open_nodes", {"names": [f"bulk-{part}-0"]})
    assert opened["result"]["structuredContent"]["entities"] == []


async def test_tool_arguments_of_the_wrong_shape_are_32602_or_tool_errors(
    served: Served,
) -> None:
    session = await open_session(served)
    for name, arguments in (
        ("fs_read", {"path": ["a"]}),
        ("fs_read", {"path": "hello.txt", "offset": -1}),
        ("sqlite_query", {"sql": "SELECT ?", "params": [{"a": 1}]}),
        ("memory_create_entities", {"entities": "all"}),
        ("clock_countdown", {"seconds": 1e30}),
    ):
        message = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        with trio.fail_after(5):
            reply = await post(served, message, session)
        response = answer(reply, 1)
        if "error" in response:
            assert response["error"]["code"] == -32602, response
        else:
            assert response["result"]["isError"] is True, response
