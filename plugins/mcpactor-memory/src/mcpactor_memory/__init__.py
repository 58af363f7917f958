"""An MCP server that remembers: a small knowledge graph kept in SQLite.

Entities (a name and a type) carry observations (short facts) and are linked by typed
relations. The tools and their arguments have the shapes of the reference MCP memory
server, so prompts written for it work here too.

Without authorization there is one graph, shared by every client. With it (HTTP with
an authorization server), each caller (issuer and subject) has a graph of its own, in
a file of its own. Everything is bounded: the values and their number per call, the
graph's bytes and each answer's bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from mcpactor import Context, RequestError, Server, ToolAnnotations, ToolError
from mcpactor.protocol import describe

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
from ._store import WORD as _WORD
from ._store import Limits, NotFound, Store, TooLarge

if TYPE_CHECKING:
    from mcpactor.auth import Principal

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
_DEFAULT_MAX_VALUE_BYTES: Final = 8192
_DEFAULT_MAX_BATCH: Final = 1000
_DEFAULT_MAX_RESULT_BYTES: Final = 1 << 20
_DEFAULT_MAX_GRAPH_BYTES: Final = 64 << 20
#: words of a search: each is a lookup of its own
_MAX_QUERY_WORDS: Final = 16
#: the callers' graphs kept open at once; the least recently used one is closed
_MAX_OPEN_GRAPHS: Final = 32
_INTERNAL_ERROR: Final = -32603

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

    #: the SQLite file holding the shared graph; callers' graphs live beside it
    path: str
    #: use FTS5 for search: None when available, False never
    full_text: bool | None = None
    #: bytes of one name, type, observation or search query, as UTF-8
    max_value_bytes: int = _DEFAULT_MAX_VALUE_BYTES
    #: values one call may send: entities, relations, names and observations together
    max_batch: int = _DEFAULT_MAX_BATCH
    #: bytes of JSON one answer of read_graph, search_nodes or open_nodes holds at most
    max_result_bytes: int = _DEFAULT_MAX_RESULT_BYTES
    #: bytes one graph holds at most (its text, and 32 bytes a row)
    max_graph_bytes: int = _DEFAULT_MAX_GRAPH_BYTES


_config: MemoryConfig
#: the shared graph, served to requests without a principal
_store: Store | None = None
#: the graphs of callers, by the hash naming their file, least recently used first
_stores: OrderedDict[str, Store] = OrderedDict()
_stores_lock = threading.Lock()


def _env_int(name: str, value: int | None, default: int, least: int) -> int:
    if value is None:
        raw = os.environ.get(name)
        try:
            value = int(raw) if raw is not None else default
        except ValueError:
            raise ValueError(f"{name} must be a whole number, got {raw!r}") from None
    if value < least:
        raise ValueError(f"{name} must be at least {least}, got {value!r}")
    return value


def configure(
    path: str | os.PathLike[str] | None = None,
    *,
    full_text: bool | None = None,
    max_value_bytes: int | None = None,
    max_batch: int | None = None,
    max_result_bytes: int | None = None,
    max_graph_bytes: int | None = None,
) -> MemoryConfig:
    """Set where the graph is kept and its limits; what is not given comes from the
    environment.

    ``MCPACTOR_MEMORY_DB`` names the SQLite file (default ``~/.mcpactor/memory.db``; its
    folder is created when first used); with authorization, each caller's graph is a
    file in the folder beside it named after it with ``.principals`` (e.g.
    ``~/.mcpactor/memory.principals/``). ``full_text=False`` searches with LIKE even
    where SQLite has FTS5. The limits: ``MCPACTOR_MEMORY_MAX_VALUE_BYTES`` (default
    8192), ``MCPACTOR_MEMORY_MAX_BATCH`` (1000), ``MCPACTOR_MEMORY_MAX_RESULT_BYTES``
    (1 MiB) and ``MCPACTOR_MEMORY_MAX_GRAPH_BYTES`` (64 MiB).

    Raises:
        ValueError: a limit is not a whole number, or too small.
    """
    global _config, _store
    config = MemoryConfig(
        path=os.path.abspath(
            os.path.expanduser(
                os.fspath(path)
                if path is not None
                else os.environ.get("MCPACTOR_MEMORY_DB") or _DEFAULT_PATH
            )
        ),
        full_text=full_text,
        max_value_bytes=_env_int(
            "MCPACTOR_MEMORY_MAX_VALUE_BYTES", max_value_bytes, _DEFAULT_MAX_VALUE_BYTES, 1
        ),
        max_batch=_env_int("MCPACTOR_MEMORY_MAX_BATCH", max_batch, _DEFAULT_MAX_BATCH, 1),
        max_result_bytes=_env_int(
            "MCPACTOR_MEMORY_MAX_RESULT_BYTES", max_result_bytes, _DEFAULT_MAX_RESULT_BYTES, 1024
        ),
        max_graph_bytes=_env_int(
            "MCPACTOR_MEMORY_MAX_GRAPH_BYTES", max_graph_bytes, _DEFAULT_MAX_GRAPH_BYTES, 1
        ),
    )
    with _stores_lock:
        closing = [*_stores.values(), *([_store] if _store is not None else [])]
        _stores.clear()
        _config = config
        _store = _new_store(config.path)
    for store in closing:
        store.retire()
    return _config


def _new_store(path: str) -> Store:
    config = _config
    limits = Limits(graph_bytes=config.max_graph_bytes, result_bytes=config.max_result_bytes)
    return Store(path, full_text=config.full_text, limits=limits)


def _principal_file(principal: Principal) -> str:
    # The caller is its issuer and subject (the client it uses does not matter); the
    # file is named by their hash, so no caller's text reaches the file system.
    who = f"{principal.issuer or ''}\x1f{principal.subject}".encode("utf-8", "surrogatepass")
    base, _ = os.path.splitext(_config.path)
    return os.path.join(base + ".principals", hashlib.sha256(who).hexdigest() + ".db")


def _graph_of(ctx: Context) -> Store:
    """The graph of the caller of ``ctx``: its own with authorization, else the shared one."""
    principal = ctx.principal
    with _stores_lock:
        if principal is None:
            store = _store
            assert store is not None, "configure() runs on import"
            return store
        path = _principal_file(principal)
        store = _stores.get(path)
        if store is None:
            store = _stores[path] = _new_store(path)
        _stores.move_to_end(path)
        evicted = [_stores.popitem(last=False)[1] for _ in range(len(_stores) - _MAX_OPEN_GRAPHS)]
    for old in evicted:
        old.retire()  # waits for a transaction in progress, outside the table's lock
    return store


@contextmanager
def _using(ctx: Context) -> Iterator[Store]:
    store = _graph_of(ctx)
    try:
        yield store
    except NotFound as exc:
        raise ToolError(
            f"no entity named {exc}: create entities before relating or describing them"
        ) from None
    except TooLarge as exc:
        raise ToolError(_too_large(exc)) from None


def _too_large(exc: TooLarge) -> str:
    if exc.what == "graph":
        return (
            f"the graph would be {exc.size} bytes, more than the limit of {exc.limit} "
            "(MCPACTOR_MEMORY_MAX_GRAPH_BYTES): delete what is no longer needed first; "
            "nothing was changed"
        )
    return (
        f"the result is more than the limit of {exc.limit} bytes "
        "(MCPACTOR_MEMORY_MAX_RESULT_BYTES): ask for less with search_nodes or open_nodes"
    )


# --- bounds on what a call sends -------------------------------------------------------------


def _check_batch(count: int) -> None:
    limit = _config.max_batch
    if count > limit:
        raise ToolError(
            f"the call sends {count} values, more than the limit of {limit} "
            "(MCPACTOR_MEMORY_MAX_BATCH): send them in parts"
        )


def _check_values(what: str, values: Iterable[str]) -> None:
    limit = _config.max_value_bytes
    for value in values:
        # A character is at least one byte: only long texts are encoded to be sure.
        if len(value) > limit // 4:
            size = len(value.encode("utf-8", "surrogatepass"))
            if size > limit:
                raise ToolError(
                    f"{what} {describe(value)} is {size} bytes, more than the limit of "
                    f"{limit} (MCPACTOR_MEMORY_MAX_VALUE_BYTES): keep it short, or split it"
                )


def _changed() -> None:
    server.notify_resource_updated(GRAPH_URI)


# --- tools ---------------------------------------------------------------------------------

_CHANGES: Final = ToolAnnotations(read_only_hint=False, destructive_hint=False)
_DELETES: Final = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True
)
_READS: Final = ToolAnnotations(read_only_hint=True, open_world_hint=False)


@server.tool(annotations=_CHANGES)
def create_entities(entities: list[NewEntity], ctx: Context) -> EntitiesCreated:
    """Create entities, each with a name, a type and optional observations.

    Names that already exist are skipped (add observations to them instead).
    """
    _check_batch(len(entities) + sum(len(e.get("observations", ())) for e in entities))
    for entity in entities:
        _check_values("the name", [entity["name"]])
        _check_values("the entity type", [entity["entityType"]])
        _check_values("an observation", entity.get("observations", ()))
    with _using(ctx) as store:
        created, skipped = store.create_entities(entities)
    if created:
        _changed()
    return {"created": created, "skipped": skipped}


def _check_relations(relations: list[Relation]) -> None:
    _check_batch(len(relations))
    for relation in relations:
        _check_values("the name", [relation["from"], relation["to"]])
        _check_values("the relation type", [relation["relationType"]])


@server.tool(annotations=_CHANGES)
def create_relations(relations: list[Relation], ctx: Context) -> RelationsCreated:
    """Relate existing entities; relation types are verbs in the active voice (works_at)."""
    _check_relations(relations)
    with _using(ctx) as store:
        created, skipped = store.create_relations(relations)
    if created:
        _changed()
    return {"created": created, "skipped": skipped}


@server.tool(annotations=_CHANGES)
def add_observations(observations: list[ObservationSet], ctx: Context) -> ObservationsAdded:
    """Add observations (short facts) to existing entities; repeats are ignored."""
    _check_batch(len(observations) + sum(len(entry["contents"]) for entry in observations))
    for entry in observations:
        _check_values("the name", [entry["entityName"]])
        _check_values("an observation", entry["contents"])
    with _using(ctx) as store:
        added = store.add_observations(observations)
    if any(entry["contents"] for entry in added):
        _changed()
    return {"added": added}


@server.tool(annotations=_DELETES)
def delete_entities(entityNames: list[str], ctx: Context) -> EntitiesDeleted:
    """Delete entities, with their observations and every relation touching them."""
    _check_batch(len(entityNames))
    _check_values("the name", entityNames)
    with _using(ctx) as store:
        deleted = store.delete_entities(entityNames)
    if deleted:
        _changed()
    return {"deleted": deleted}


@server.tool(annotations=_DELETES)
def delete_observations(deletions: list[ObservationDeletion], ctx: Context) -> ObservationsDeleted:
    """Delete observations from entities; missing ones are ignored."""
    _check_batch(len(deletions) + sum(len(entry["observations"]) for entry in deletions))
    for entry in deletions:
        _check_values("the name", [entry["entityName"]])
        _check_values("an observation", entry["observations"])
    with _using(ctx) as store:
        deleted = store.delete_observations(deletions)
    if any(entry["contents"] for entry in deleted):
        _changed()
    return {"deleted": deleted}


@server.tool(annotations=_DELETES)
def delete_relations(relations: list[Relation], ctx: Context) -> RelationsDeleted:
    """Delete relations; missing ones are ignored."""
    _check_relations(relations)
    with _using(ctx) as store:
        deleted = store.delete_relations(relations)
    if deleted:
        _changed()
    return {"deleted": deleted}


@server.tool(annotations=_READS)
def read_graph(ctx: Context) -> Graph:
    """The whole knowledge graph."""
    with _using(ctx) as store:
        return store.read_graph()


@server.tool(annotations=_READS)
def search_nodes(query: str, ctx: Context) -> Graph:
    """Find entities whose name, type or observations match every word of the query.

    Args:
        query: words to look for (at most 16); each matches the start of a word (with
            full-text search) or any part of the text (without it), ignoring case
    """
    _check_values("the query", [query])
    words = len(set(_WORD.findall(query)))
    if words > _MAX_QUERY_WORDS:
        raise ToolError(
            f"the query has {words} different words, more than the limit of "
            f"{_MAX_QUERY_WORDS}: search for the few that matter"
        )
    with _using(ctx) as store:
        return store.search(query)


@server.tool(annotations=_READS)
def open_nodes(names: list[str], ctx: Context) -> Graph:
    """The named entities and the relations touching them; unknown names are ignored."""
    _check_batch(len(names))
    _check_values("the name", names)
    with _using(ctx) as store:
        return store.open_nodes(names)


@server.resource(GRAPH_URI, name="graph", title="Knowledge graph", mime_type="application/json")
def graph_resource(ctx: Context) -> str:
    """The whole knowledge graph as JSON; subscribe to hear when it changes."""
    try:
        with _using(ctx) as store:
            return json.dumps(store.read_graph())
    except ToolError as exc:
        raise RequestError(_INTERNAL_ERROR, str(exc), {"uri": GRAPH_URI}) from None


configure()
