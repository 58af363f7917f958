"""The memory server: a knowledge graph that survives restarts and can be searched."""

from __future__ import annotations

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
from mcpactor.client import ClientSession

GUARD: Final = 10.0


def _has_fts5() -> bool:
    try:
        sqlite3.connect(":memory:").execute("CREATE VIRTUAL TABLE t USING fts5(x)")
    except sqlite3.OperationalError:
        return False
    return True


HAS_FTS5: Final = _has_fts5()


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


async def test_open_nodes_takes_many_names(client: ClientSession) -> None:
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
        updated = await client.wait_for_notification("notifications/resources/updated")
    assert updated.params == {"uri": "memory://graph"}


def test_configure_reads_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPACTOR_MEMORY_DB", str(tmp_path / "from-env.db"))
    assert mcpactor_memory.configure().path == str(tmp_path / "from-env.db")
    monkeypatch.delenv("MCPACTOR_MEMORY_DB")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert mcpactor_memory.configure().path == str(tmp_path / ".mcpactor" / "memory.db")
