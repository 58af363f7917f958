"""An MCP server that remembers: a small knowledge graph kept in SQLite.

Entities (a name and a type) carry observations (short facts) and are linked by typed
relations. The tools and their arguments have the shapes of the reference MCP memory
server, so prompts written for it work here too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Final

from mcpactor import Server, ToolAnnotations, ToolError

from ._shapes import (
    EntitiesCreated,
    EntitiesDeleted,
    Entity,
    Graph,
    NewEntity,
    ObservationDeletion,
    ObservationsAdded,
    ObservationsDeleted,
    ObservationSet,
    Relation,
    RelationsCreated,
    RelationsDeleted,
)
from ._store import NotFound, Store

__all__ = [
    "Entity",
    "Graph",
    "MemoryConfig",
    "NewEntity",
    "ObservationDeletion",
    "ObservationSet",
    "Relation",
    "configure",
    "server",
]
__version__ = "0.1.0"

GRAPH_URI: Final = "memory://graph"
_DEFAULT_PATH: Final = "~/.mcpactor/memory.db"

server = Server(
    "memory",
    version=__version__,
    title="Memory",
    instructions=(
        "A persistent knowledge graph. Store people, projects, places and the like as "
        "entities with observations (short facts), link them with relations in the active "
        "voice (alice works_at acme), and search or open nodes before answering questions "
        "about what you were told earlier."
    ),
)


# --- configuration -----------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryConfig:
    """The memory server's settings."""

    #: the SQLite file holding the graph
    path: str
    #: use FTS5 for search: None when available, False never
    full_text: bool | None = None


_config: MemoryConfig
_store: Store | None = None


def configure(
    path: str | os.PathLike[str] | None = None, *, full_text: bool | None = None
) -> MemoryConfig:
    """Set where the graph is kept; what is not given comes from the environment.

    ``MCPACTOR_MEMORY_DB`` names the SQLite file (default ``~/.mcpactor/memory.db``; its
    folder is created when first used). ``full_text=False`` searches with LIKE even
    where SQLite has FTS5.
    """
    global _config, _store
    if _store is not None:
        _store.close()
    if path is None:
        path = os.environ.get("MCPACTOR_MEMORY_DB") or _DEFAULT_PATH
    resolved = os.path.abspath(os.path.expanduser(os.fspath(path)))
    _config = MemoryConfig(path=resolved, full_text=full_text)
    _store = Store(resolved, full_text=full_text)
    return _config


@contextmanager
def _using_store() -> Iterator[Store]:
    store = _store
    assert store is not None, "configure() runs on import"
    try:
        yield store
    except NotFound as exc:
        raise ToolError(
            f"no entity named {exc}: create entities before relating or describing them"
        ) from None


def _changed() -> None:
    server.notify_resource_updated(GRAPH_URI)


# --- tools ---------------------------------------------------------------------------------

_CHANGES: Final = ToolAnnotations(read_only_hint=False, destructive_hint=False)
_DELETES: Final = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True
)
_READS: Final = ToolAnnotations(read_only_hint=True, open_world_hint=False)


@server.tool(annotations=_CHANGES)
def create_entities(entities: list[NewEntity]) -> EntitiesCreated:
    """Create entities, each with a name, a type and optional observations.

    Names that already exist are skipped (add observations to them instead).
    """
    with _using_store() as store:
        created, skipped = store.create_entities(entities)
    if created:
        _changed()
    return {"created": created, "skipped": skipped}


@server.tool(annotations=_CHANGES)
def create_relations(relations: list[Relation]) -> RelationsCreated:
    """Relate existing entities; relation types are verbs in the active voice (works_at)."""
    with _using_store() as store:
        created, skipped = store.create_relations(relations)
    if created:
        _changed()
    return {"created": created, "skipped": skipped}


@server.tool(annotations=_CHANGES)
def add_observations(observations: list[ObservationSet]) -> ObservationsAdded:
    """Add observations (short facts) to existing entities; repeats are ignored."""
    with _using_store() as store:
        added = store.add_observations(observations)
    if any(entry["contents"] for entry in added):
        _changed()
    return {"added": added}


@server.tool(annotations=_DELETES)
def delete_entities(entityNames: list[str]) -> EntitiesDeleted:
    """Delete entities, with their observations and every relation touching them."""
    with _using_store() as store:
        deleted = store.delete_entities(entityNames)
    if deleted:
        _changed()
    return {"deleted": deleted}


@server.tool(annotations=_DELETES)
def delete_observations(deletions: list[ObservationDeletion]) -> ObservationsDeleted:
    """Delete observations from entities; missing ones are ignored."""
    with _using_store() as store:
        deleted = store.delete_observations(deletions)
    if any(entry["contents"] for entry in deleted):
        _changed()
    return {"deleted": deleted}


@server.tool(annotations=_DELETES)
def delete_relations(relations: list[Relation]) -> RelationsDeleted:
    """Delete relations; missing ones are ignored."""
    with _using_store() as store:
        deleted = store.delete_relations(relations)
    if deleted:
        _changed()
    return {"deleted": deleted}


@server.tool(annotations=_READS)
def read_graph() -> Graph:
    """The whole knowledge graph."""
    with _using_store() as store:
        return store.read_graph()


@server.tool(annotations=_READS)
def search_nodes(query: str) -> Graph:
    """Find entities whose name, type or observations match every word of the query.

    Args:
        query: words to look for; each matches the start of a word (with full-text
            search) or any part of the text (without it), ignoring case
    """
    with _using_store() as store:
        return store.search(query)


@server.tool(annotations=_READS)
def open_nodes(names: list[str]) -> Graph:
    """The named entities and the relations touching them; unknown names are ignored."""
    with _using_store() as store:
        return store.open_nodes(names)


@server.resource(GRAPH_URI, name="graph", title="Knowledge graph", mime_type="application/json")
def graph_resource() -> str:
    """The whole knowledge graph as JSON; subscribe to hear when it changes."""
    with _using_store() as store:
        return json.dumps(store.read_graph())


configure()
