"""The memory server: a knowledge graph that survives restarts and can be searched."""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, Final

import mcpactor_memory
import pytest
import trio

import mcpactor.testing
from mcpactor import RequestError
from mcpactor.auth import InvalidToken, Principal, ResourceServer
from mcpactor.client import ClientSession, connect_http
from mcpactor.transports import HttpOptions, serve_http

GUARD: Final = 10.0


def _has_fts5() -> bool:
    try:
        sqlite3.connect(":memory:").execute("CREATE VIRTUAL TABLE t USING fts5(x)")
    except sqlite3.OperationalError:
        return False
    return True


HAS_FTS5: Final = _has_fts5()
# The module, not the shared store the package keeps under the same name.
_store: Any = importlib.import_module("mcpactor_memory._store")


@pytest.fixture(params=[None, False], ids=["fts-if-available", "like"])
def db_path(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "nested" / "memory.db"
    mcpactor_memory.configure(path, full_text=request.param)
    yield path
    mcpactor_memory.configure(tmp_path / "unused.db")


@pytest.fixture
async def client(db_path: Path) -> AsyncIterator[ClientSession]:
    async with mcpactor.testing.client(mcpactor_memory.server) as session:
        yield session


async def call(client: ClientSession, tool: str, **arguments: Any) -> Any:
    result = await client.call_tool(tool, arguments)
    assert not result.get("isError"), result
    return result["structuredContent"]


async def call_error(client: ClientSession, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.get("isError") is True, result
    text: str = result["content"][0]["text"]
    return text


def entity(name: str, kind: str, *observations: str) -> dict[str, Any]:
    return {"name": name, "entityType": kind, "observations": list(observations)}


def relation(source: str, target: str, kind: str) -> dict[str, str]:
    return {"from": source, "to": target, "relationType": kind}


async def seed(client: ClientSession) -> None:
    await call(
        client,
        "create_entities",
        entities=[
            entity("Alice", "person", "speaks Norwegian", "likes climbing"),
            entity("Bob", "person", "drinks tea"),
            entity("Acme", "company", "makes anvils"),
            entity("Oslo", "city"),
        ],
    )
    await call(
        client,
        "create_relations",
        relations=[
            relation("Alice", "Acme", "works_at"),
            relation("Bob", "Acme", "works_at"),
            relation("Alice", "Oslo", "lives_in"),
        ],
    )


def names(graph: dict[str, Any]) -> list[str]:
    return [e["name"] for e in graph["entities"]]


def test_the_entry_point_names_the_server() -> None:
    [entry] = [
        ep
        for ep in importlib.metadata.entry_points(group="mcpactor.servers")
        if ep.name == "memory"
    ]
    assert entry.load() is mcpactor_memory.server


async def test_the_tools_have_the_reference_shapes(client: ClientSession) -> None:
    tools = {tool["name"]: tool for tool in await client.list_tools()}
    assert set(tools) == {
        "create_entities",
        "create_relations",
        "add_observations",
        "delete_entities",
        "delete_observations",
        "delete_relations",
        "read_graph",
        "search_nodes",
        "open_nodes",
    }
    item = tools["create_relations"]["inputSchema"]["properties"]["relations"]["items"]
    assert item["required"] == ["from", "to", "relationType"]
    new = tools["create_entities"]["inputSchema"]["properties"]["entities"]["items"]
    assert new["required"] == ["name", "entityType"]
    assert set(tools["read_graph"]["outputSchema"]["properties"]) == {"entities", "relations"}
    assert tools["read_graph"]["annotations"]["readOnlyHint"] is True
    assert tools["delete_entities"]["annotations"]["destructiveHint"] is True


async def test_the_graph_round_trips_and_persists(client: ClientSession, db_path: Path) -> None:
    await seed(client)
    graph = await call(client, "read_graph")
    assert graph == {
        "entities": [
            entity("Acme", "company", "makes anvils"),
            entity("Alice", "person", "speaks Norwegian", "likes climbing"),
            entity("Bob", "person", "drinks tea"),
            entity("Oslo", "city"),
        ],
        "relations": [
            relation("Alice", "Acme", "works_at"),
            relation("Alice", "Oslo", "lives_in"),
            relation("Bob", "Acme", "works_at"),
        ],
    }
    # A new server process (a fresh store on the same file) sees the same graph.
    mcpactor_memory.configure(db_path, full_text=mcpactor_memory._config.full_text)
    assert await call(client, "read_graph") == graph
    [content] = (await client.read_resource("memory://graph"))["contents"]
    assert content["mimeType"] == "application/json"
    assert json.loads(content["text"]) == graph


async def test_creating_skips_what_exists(client: ClientSession) -> None:
    await seed(client)
    result = await call(
        client,
        "create_entities",
        entities=[
            {"name": "Alice", "entityType": "robot"},
            {"name": "Carol", "entityType": "person", "observations": ["new", "new"]},
            {"name": "Carol", "entityType": "person"},
        ],
    )
    assert result == {"created": [entity("Carol", "person", "new")], "skipped": ["Alice", "Carol"]}
    alice = await call(client, "open_nodes", names=["Alice"])
    assert alice["entities"][0]["entityType"] == "person"

    again = await call(
        client,
        "create_relations",
        relations=[relation("Alice", "Acme", "works_at"), relation("Carol", "Acme", "works_at")],
    )
    assert again == {
        "created": [relation("Carol", "Acme", "works_at")],
        "skipped": [relation("Alice", "Acme", "works_at")],
    }


async def test_relations_need_existing_entities_and_fail_as_a_whole(
    client: ClientSession,
) -> None:
    await seed(client)
    message = await call_error(
        client,
        "create_relations",
        relations=[relation("Bob", "Oslo", "visits"), relation("Bob", "Mars", "visits")],
    )
    assert message == (
        "no entity named 'Mars': create entities before relating or describing them"
    )
    bob = await call(client, "open_nodes", names=["Bob"])
    assert relation("Bob", "Oslo", "visits") not in bob["relations"]


async def test_observations_are_added_once(client: ClientSession) -> None:
    await seed(client)
    result = await call(
        client,
        "add_observations",
        observations=[
            {"entityName": "Bob", "contents": ["drinks tea", "plays chess", "plays chess"]},
            {"entityName": "Oslo", "contents": ["capital of Norway"]},
        ],
    )
    assert result == {
        "added": [
            {"entityName": "Bob", "contents": ["plays chess"]},
            {"entityName": "Oslo", "contents": ["capital of Norway"]},
        ]
    }
    message = await call_error(
        client,
        "add_observations",
        observations=[
            {"entityName": "Bob", "contents": ["is tall"]},
            {"entityName": "Nobody", "contents": ["x"]},
        ],
    )
    assert "no entity named 'Nobody'" in message
    bob = (await call(client, "open_nodes", names=["Bob"]))["entities"][0]
    assert bob["observations"] == ["drinks tea", "plays chess"]


async def test_deleting_entities_takes_their_observations_and_relations(
    client: ClientSession,
) -> None:
    await seed(client)
    result = await call(client, "delete_entities", entityNames=["Acme", "Ghost"])
    assert result == {"deleted": ["Acme"]}
    graph = await call(client, "read_graph")
    assert names(graph) == ["Alice", "Bob", "Oslo"]
    assert graph["relations"] == [relation("Alice", "Oslo", "lives_in")]
    assert (await call(client, "search_nodes", query="anvils"))["entities"] == []
    # The name is free again, without the old observations.
    await call(client, "create_entities", entities=[{"name": "Acme", "entityType": "shop"}])
    acme = (await call(client, "open_nodes", names=["Acme"]))["entities"]
    assert acme == [entity("Acme", "shop")]


async def test_deleting_observations_and_relations(client: ClientSession) -> None:
    await seed(client)
    observations = await call(
        client,
        "delete_observations",
        deletions=[
            {"entityName": "Alice", "observations": ["likes climbing", "never said"]},
            {"entityName": "Ghost", "observations": ["boo"]},
        ],
    )
    assert observations == {"deleted": [{"entityName": "Alice", "contents": ["likes climbing"]}]}
    relations = await call(
        client,
        "delete_relations",
        relations=[relation("Alice", "Oslo", "lives_in"), relation("Alice", "Oslo", "hates")],
    )
    assert relations == {"deleted": [relation("Alice", "Oslo", "lives_in")]}
    alice = await call(client, "open_nodes", names=["Alice"])
    assert alice == {
        "entities": [entity("Alice", "person", "speaks Norwegian")],
        "relations": [relation("Alice", "Acme", "works_at")],
    }


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("alice", ["Alice"]),  # by name, ignoring case
        ("person", ["Alice", "Bob"]),  # by type
        ("tea", ["Bob"]),  # by observation
        ("norweg", ["Alice"]),  # a word's start
        ("person climbing", ["Alice"]),  # every word must match
        ("ACME anvils", ["Acme"]),
        ("zebra", []),
        ("", []),
        ("   ", []),
        # Full-text syntax is taken as plain words, never as an expression.
        ('"tea', ["Bob"]),
        ("tea OR anvils", []),
        ("NEAR(tea)", []),  # "near" is a word like any other
        ("x* -tea", []),
        ("100%", []),
        ("_", []),
    ],
)
async def test_search_nodes(client: ClientSession, query: str, found: list[str]) -> None:
    await seed(client)
    assert names(await call(client, "search_nodes", query=query)) == found


async def test_search_returns_relations_touching_what_it_found(client: ClientSession) -> None:
    await seed(client)
    result = await call(client, "search_nodes", query="anvils")
    assert names(result) == ["Acme"]
    assert result["relations"] == [
        relation("Alice", "Acme", "works_at"),
        relation("Bob", "Acme", "works_at"),
    ]


async def test_search_follows_every_change(client: ClientSession) -> None:
    await seed(client)
    await call(
        client, "add_observations", observations=[{"entityName": "Oslo", "contents": ["fjord"]}]
    )
    assert names(await call(client, "search_nodes", query="fjord")) == ["Oslo"]
    await call(
        client,
        "delete_observations",
        deletions=[{"entityName": "Oslo", "observations": ["fjord"]}],
    )
    assert names(await call(client, "search_nodes", query="fjord")) == []
    await call(client, "delete_entities", entityNames=["Bob"])
    assert names(await call(client, "search_nodes", query="tea")) == []


async def test_the_store_uses_full_text_search_where_it_can(db_path: Path) -> None:
    store = mcpactor_memory._store
    assert store is not None
    store.read_graph()
    wanted = mcpactor_memory._config.full_text
    assert store.full_text is (HAS_FTS5 and wanted is not False)


async def test_a_fresh_store_searches_the_way_it_was_configured(
    client: ClientSession, db_path: Path
) -> None:
    await seed(client)
    full_text = mcpactor_memory._config.full_text
    # A new store whose first call is a search, as after a restart.
    mcpactor_memory.configure(db_path, full_text=full_text)
    found = names(await call(client, "search_nodes", query="orwegian"))
    # Full-text search matches the start of words; LIKE matches inside them.
    assert found == ([] if HAS_FTS5 and full_text is not False else ["Alice"])


async def test_open_nodes_takes_many_names(client: ClientSession, db_path: Path) -> None:
    mcpactor_memory.configure(db_path, full_text=mcpactor_memory._config.full_text, max_batch=2000)
    many = [{"name": f"n{i:04}", "entityType": "number"} for i in range(1500)]
    await call(client, "create_entities", entities=many)
    result = await call(client, "open_nodes", names=[e["name"] for e in many] + ["missing"])
    assert names(result) == [e["name"] for e in many]


async def test_turning_full_text_search_back_on_rebuilds_the_index(tmp_path: Path) -> None:
    path = tmp_path / "switch.db"
    mcpactor_memory.configure(path, full_text=False)
    async with mcpactor.testing.client(mcpactor_memory.server) as client:
        await seed(client)
        # Written while the index was off: the index must catch up when it is back on.
        mcpactor_memory.configure(path)
        await call(
            client,
            "add_observations",
            observations=[{"entityName": "Bob", "contents": ["owns a kayak"]}],
        )
        assert mcpactor_memory._store is not None
        assert mcpactor_memory._store.full_text is HAS_FTS5
        assert names(await call(client, "search_nodes", query="climbing")) == ["Alice"]
        assert names(await call(client, "search_nodes", query="kayak")) == ["Bob"]


async def test_open_nodes(client: ClientSession) -> None:
    await seed(client)
    result = await call(client, "open_nodes", names=["Oslo", "Bob", "Nobody"])
    assert names(result) == ["Bob", "Oslo"]
    assert result["relations"] == [
        relation("Alice", "Oslo", "lives_in"),
        relation("Bob", "Acme", "works_at"),
    ]
    assert await call(client, "open_nodes", names=[]) == {"entities": [], "relations": []}


async def test_subscribers_hear_when_the_graph_changes(client: ClientSession) -> None:
    await client.subscribe_resource("memory://graph")
    await call(client, "create_entities", entities=[{"name": "Eve", "entityType": "person"}])
    with trio.fail_after(GUARD):
        updated = await client.notifications.wait_for("notifications/resources/updated")
    assert updated.params == {"uri": "memory://graph"}


def test_configure_reads_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPACTOR_MEMORY_DB", str(tmp_path / "from-env.db"))
    assert mcpactor_memory.configure().path == str(tmp_path / "from-env.db")
    monkeypatch.delenv("MCPACTOR_MEMORY_DB")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert mcpactor_memory.configure().path == str(tmp_path / ".mcpactor" / "memory.db")


# --- bounds ----------------------------------------------------------------------------


def test_configure_reads_the_limits_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCPACTOR_MEMORY_MAX_VALUE_BYTES", "100")
    monkeypatch.setenv("MCPACTOR_MEMORY_MAX_BATCH", "7")
    monkeypatch.setenv("MCPACTOR_MEMORY_MAX_RESULT_BYTES", "2048")
    monkeypatch.setenv("MCPACTOR_MEMORY_MAX_GRAPH_BYTES", "4096")
    config = mcpactor_memory.configure(tmp_path / "m.db")
    assert (
        config.max_value_bytes,
        config.max_batch,
        config.max_result_bytes,
        config.max_graph_bytes,
    ) == (100, 7, 2048, 4096)
    monkeypatch.setenv("MCPACTOR_MEMORY_MAX_BATCH", "many")
    with pytest.raises(ValueError, match="MCPACTOR_MEMORY_MAX_BATCH must be a whole number"):
        mcpactor_memory.configure(tmp_path / "m.db")
    with pytest.raises(ValueError, match="MCPACTOR_MEMORY_MAX_RESULT_BYTES must be at least"):
        mcpactor_memory.configure(tmp_path / "m.db", max_batch=1, max_result_bytes=10)


def limited(db_path: Path, **limits: int) -> None:
    mcpactor_memory.configure(db_path, full_text=mcpactor_memory._config.full_text, **limits)


@pytest.mark.parametrize(
    ("tool", "arguments", "what"),
    [
        ("create_entities", {"entities": [entity("x" * 101, "t")]}, "the name"),
        ("create_entities", {"entities": [entity("Zoe", "é" * 51)]}, "the entity type"),
        ("create_entities", {"entities": [entity("Zoe", "t", "o" * 101)]}, "an observation"),
        (
            "add_observations",
            {"observations": [{"entityName": "Bob", "contents": ["ok", "o" * 101]}]},
            "an observation",
        ),
        (
            "create_relations",
            {"relations": [relation("Bob", "Acme", "r" * 101)]},
            "the relation type",
        ),
        ("open_nodes", {"names": ["n" * 101]}, "the name"),
        ("search_nodes", {"query": "q" * 101}, "the query"),
    ],
)
async def test_values_over_the_limit_are_refused_and_change_nothing(
    client: ClientSession, db_path: Path, tool: str, arguments: dict[str, Any], what: str
) -> None:
    await seed(client)
    before = await call(client, "read_graph")
    limited(db_path, max_value_bytes=100)
    message = await call_error(client, tool, **arguments)
    assert message.startswith(f"{what} ")
    assert "bytes, more than the limit of 100 (MCPACTOR_MEMORY_MAX_VALUE_BYTES)" in message
    assert len(message) < 400  # the value is quoted in part, not whole
    assert await call(client, "read_graph") == before


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        (
            "create_entities",
            {"entities": [entity("A", "t", "1", "2"), entity("B", "t", "3", "4")]},
        ),
        ("add_observations", {"observations": [{"entityName": "Bob", "contents": list("abcde")}]}),
        ("create_relations", {"relations": [relation("Bob", "Acme", str(i)) for i in range(6)]}),
        ("delete_entities", {"entityNames": list("abcdef")}),
        (
            "delete_observations",
            {"deletions": [{"entityName": "Bob", "observations": list("abcde")}]},
        ),
        ("delete_relations", {"relations": [relation("Bob", "Acme", str(i)) for i in range(6)]}),
        ("open_nodes", {"names": list("abcdef")}),
    ],
)
async def test_batches_over_the_limit_are_refused(
    client: ClientSession, db_path: Path, tool: str, arguments: dict[str, Any]
) -> None:
    await seed(client)
    limited(db_path, max_batch=5)
    message = await call_error(client, tool, **arguments)
    assert message.startswith("the call sends ")
    assert "values, more than the limit of 5 (MCPACTOR_MEMORY_MAX_BATCH): send them in parts" in (
        message
    )


async def test_a_search_of_many_words_is_refused(client: ClientSession) -> None:
    query = " ".join(f"w{i}" for i in range(17))
    message = await call_error(client, "search_nodes", query=query)
    assert message.startswith("the query has 17 different words, more than the limit of 16")
    # Repeated words are one word.
    assert names(await call(client, "search_nodes", query="tea " * 40)) == []


async def test_answers_over_the_limit_are_refused(client: ClientSession, db_path: Path) -> None:
    await seed(client)
    limited(db_path, max_result_bytes=1024)
    await call(
        client,
        "add_observations",
        observations=[
            {"entityName": "Bob", "contents": [f"note {i} " + "x" * 90 for i in range(12)]}
        ],
    )
    expected = (
        "the result is more than the limit of 1024 bytes (MCPACTOR_MEMORY_MAX_RESULT_BYTES): "
        "ask for less with search_nodes or open_nodes"
    )
    assert await call_error(client, "read_graph") == expected
    assert await call_error(client, "open_nodes", names=["Bob"]) == expected
    assert await call_error(client, "search_nodes", query="note") == expected
    # Less fits.
    assert names(await call(client, "open_nodes", names=["Oslo"])) == ["Oslo"]
    with pytest.raises(RequestError) as info:
        await client.read_resource("memory://graph")
    assert info.value.code == -32603
    assert info.value.message == expected


async def test_the_graph_is_bounded_in_bytes(client: ClientSession, db_path: Path) -> None:
    await seed(client)
    store = mcpactor_memory._store
    assert store is not None
    used = store.size()
    # Each row counts its text and a fixed overhead: 4 entities, 4 observations, 3 relations.
    text = "AlicepersonBobpersonAcmecompanyOslocity"
    text += "speaks Norwegianlikes climbingdrinks teamakes anvils" + "works_at" * 2 + "lives_in"
    assert used == len(text) + 11 * _store.ROW_BYTES
    limited(db_path, max_graph_bytes=used + 100)
    before = await call(client, "read_graph")
    message = await call_error(
        client,
        "add_observations",
        observations=[{"entityName": "Bob", "contents": ["short", "y" * 80]}],
    )
    assert message == (
        f"the graph would be {used + 2 * _store.ROW_BYTES + 85} bytes, more than the limit "
        f"of {used + 100} (MCPACTOR_MEMORY_MAX_GRAPH_BYTES): delete what is no longer needed "
        "first; nothing was changed"
    )
    assert await call(client, "read_graph") == before
    for tool, arguments in [
        ("create_entities", {"entities": [entity("Zed", "x" * 100)]}),
        ("create_relations", {"relations": [relation("Bob", "Oslo", "v" * 100)]}),
    ]:
        assert "more than the limit" in await call_error(client, tool, **arguments)
    assert await call(client, "read_graph") == before
    # Deleting makes room, and the count follows deletions that cascade.
    await call(client, "delete_entities", entityNames=["Alice"])
    assert store.size() == used - (5 + 6 + 16 + 14 + 8 + 8) - 5 * _store.ROW_BYTES
    await call(
        client, "add_observations", observations=[{"entityName": "Bob", "contents": ["y" * 80]}]
    )


async def test_a_graph_written_before_it_was_counted_is_counted_once(
    db_path: Path, tmp_path: Path
) -> None:
    path = tmp_path / "old.db"
    old = sqlite3.connect(path)
    old.executescript(_store._SCHEMA)
    old.executescript(
        """
        INSERT INTO entities (id, name, entity_type) VALUES (1, 'Ann', 'person');
        INSERT INTO observations (entity_id, content) VALUES (1, 'knits');
        """
    )
    old.commit()
    old.close()
    mcpactor_memory.configure(path, full_text=mcpactor_memory._config.full_text)
    store = mcpactor_memory._store
    assert store is not None
    assert store.size() == len("Annpersonknits") + 2 * _store.ROW_BYTES
    async with mcpactor.testing.client(mcpactor_memory.server) as client:
        assert names(await call(client, "search_nodes", query="knits")) == ["Ann"]


@pytest.mark.skipif(not HAS_FTS5, reason="this SQLite has no FTS5")
def test_the_index_of_earlier_versions_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "v0.db"
    old = sqlite3.connect(path)
    old.executescript(_store._SCHEMA)
    old.executescript(
        """
        CREATE VIRTUAL TABLE search_index USING fts5(name, entity_type, observations);
        CREATE TRIGGER memory_entity_added AFTER INSERT ON entities BEGIN
            INSERT INTO search_index (rowid, name, entity_type, observations)
            VALUES (new.id, new.name, new.entity_type, '');
        END;
        INSERT INTO entities (id, name, entity_type) VALUES (1, 'Ann', 'person');
        INSERT INTO observations (entity_id, content) VALUES (1, 'knits scarves');
        """
    )
    old.commit()
    old.close()
    store = _store.Store(
        str(path), limits=_store.Limits(graph_bytes=1 << 20, result_bytes=1 << 20)
    )
    assert [e["name"] for e in store.search("scarv")["entities"]] == ["Ann"]
    store.close()
    check = sqlite3.connect(path)
    tables = {row[0] for row in check.execute("SELECT name FROM sqlite_master")}
    check.close()
    assert "search_index" not in tables
    assert "memory_entity_added" not in tables


@pytest.mark.skipif(not HAS_FTS5, reason="this SQLite has no FTS5")
def test_adding_an_observation_costs_the_same_however_many_the_entity_has(
    tmp_path: Path,
) -> None:
    # 5 000 short notes on one entity took minutes when each insert re-indexed every
    # observation of it. Counted in SQLite's virtual machine steps, not in time: adding
    # one note to an entity with 2 000 must cost what it costs with 20.
    store = _store.Store(
        str(tmp_path / "steps.db"), limits=_store.Limits(graph_bytes=1 << 30, result_bytes=1 << 20)
    )
    store.create_entities([{"name": "Ann", "entityType": "person"}])

    def steps_to_add(note: str) -> int:
        steps = 0

        def count() -> int:
            nonlocal steps
            steps += 1
            return 0

        with store.transaction() as connection:
            connection.set_progress_handler(count, 1)
        try:
            store.add_observations([{"entityName": "Ann", "contents": [note]}])
        finally:
            with store.transaction() as connection:
                connection.set_progress_handler(None, 1)
        return steps

    store.add_observations([{"entityName": "Ann", "contents": [f"n{i}" for i in range(20)]}])
    few = steps_to_add("one more")
    store.add_observations([{"entityName": "Ann", "contents": [f"m{i}" for i in range(2000)]}])
    many = steps_to_add("and another")
    assert many <= few + 10
    assert [e["name"] for e in store.search("another")["entities"]] == ["Ann"]
    store.close()


# --- a graph per caller ------------------------------------------------------------------

RESOURCE: Final = "https://memory.example.com/mcp"
ISSUER: Final = "https://auth.example.com"


class Tokens:
    """A verifier that knows a few fixed tokens."""

    def __init__(self, known: dict[str, Principal]) -> None:
        self.known = known

    async def verify(self, token: str) -> Principal:
        found = self.known.get(token)
        if found is None:
            raise InvalidToken("unknown token")
        return found


async def test_each_caller_has_a_graph_of_its_own(db_path: Path) -> None:
    tokens = Tokens(
        {
            "alice": Principal("alice", issuer=ISSUER, client_id="app"),
            "alice-elsewhere": Principal("alice", issuer=ISSUER, client_id="other-app"),
            "bob": Principal("bob", issuer=ISSUER, client_id="app"),
            "bob-of-another-issuer": Principal(
                "bob", issuer="https://else.example", client_id="app"
            ),
        }
    )
    options = HttpOptions(
        resource_server=ResourceServer(
            resource=RESOURCE, authorization_servers=[ISSUER], verifier=tokens
        )
    )
    async with trio.open_nursery() as nursery:
        host, port = await nursery.start(
            functools.partial(serve_http, mcpactor_memory.server, port=0, options=options)
        )
        url = f"http://{host}:{port}/mcp"

        def as_(token: str) -> Any:
            return connect_http(url, headers={"authorization": f"Bearer {token}"}, initialize=True)

        async with as_("alice") as alice, as_("bob") as bob:
            await seed(alice)
            assert names(await call(alice, "read_graph")) == ["Acme", "Alice", "Bob", "Oslo"]
            assert await call(bob, "read_graph") == {"entities": [], "relations": []}
            assert await call(bob, "search_nodes", query="tea") == {
                "entities": [],
                "relations": [],
            }
            await call(bob, "create_entities", entities=[entity("Alice", "cat", "purrs")])
            message = await call_error(
                bob, "add_observations", observations=[{"entityName": "Bob", "contents": ["x"]}]
            )
            assert "no entity named 'Bob'" in message
            [content] = (await bob.read_resource("memory://graph"))["contents"]
            assert json.loads(content["text"])["entities"] == [entity("Alice", "cat", "purrs")]
        # The same caller through another client, and another caller of the same name
        # vouched for by another issuer.
        async with as_("alice-elsewhere") as again, as_("bob-of-another-issuer") as other:
            assert names(await call(again, "search_nodes", query="tea")) == ["Bob"]
            assert await call(other, "read_graph") == {"entities": [], "relations": []}
        nursery.cancel_scope.cancel()
    # Without a principal (stdio, no authorization) the shared graph is untouched.
    async with mcpactor.testing.client(mcpactor_memory.server) as shared:
        assert await call(shared, "read_graph") == {"entities": [], "relations": []}
    # Each caller's graph is a file named by a hash of who it is.
    folder = db_path.parent / "memory.principals"
    expected = {
        hashlib.sha256(f"{issuer}\x1f{subject}".encode()).hexdigest() + ".db"
        for issuer, subject in [(ISSUER, "alice"), (ISSUER, "bob")]
    }
    assert expected <= {p.name for p in folder.iterdir()}


class Stop(BaseException):
    """Stands in for trio.Cancelled in a store used outside a request."""


def test_a_cancelled_request_interrupts_its_statement_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store.Store(
        str(tmp_path / "cancel.db"),
        limits=_store.Limits(graph_bytes=1 << 30, result_bytes=1 << 30),
    )
    store.create_entities([{"name": "Ann", "entityType": "person"}])
    looks = 0

    def cancelled() -> None:
        nonlocal looks
        looks += 1
        raise Stop

    monkeypatch.setattr(_store, "check_cancelled", cancelled)
    notes = [f"note {i}" for i in range(2000)]
    with pytest.raises(Stop):
        store.add_observations([{"entityName": "Ann", "contents": notes}])
    # Once from the progress handler, which interrupted the statement, once to raise.
    assert looks == 2
    monkeypatch.undo()
    assert store.read_graph()["entities"] == [
        {"name": "Ann", "entityType": "person", "observations": []}
    ]
    store.close()
