# The knowledge graph in SQLite: entities, their observations, relations between them.
#
# One connection serves every worker thread, one transaction at a time, and each call
# does its work in one transaction, so a failure changes nothing. Entities have an
# INTEGER PRIMARY KEY so their ids survive VACUUM; deleting one cascades to its
# observations and relations.
#
# Every step is linear in what the call sends or asks for: the callers bound the sizes
# and numbers of values before a transaction starts, and nothing here walks more of the
# graph than the call touches.
#
# - Search uses FTS5 when SQLite has the module: one index row per entity (name, type)
#   and one per observation, kept in step by triggers, so adding an observation indexes
#   that observation alone. Without FTS5 (or with it switched off) the triggers are
#   dropped and search falls back to LIKE; switching back on rebuilds the index.
# - The bytes the graph holds are kept in one row by triggers, so a change can be held
#   to the graph's limit in one look; a result is counted as it is read and given up
#   past its limit.
# - A request cancelled while its statement runs interrupts it (the progress handler
#   asks ``mcpactor.check_cancelled``), and the transaction rolls back.

from __future__ import annotations

import os
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Final

import orjson

from mcpactor import check_cancelled

from ._shapes import Entity, Graph, NewEntity, ObservationDeletion, ObservationSet, Relation

__all__ = ["ROW_BYTES", "WORD", "Limits", "NotFound", "Store", "TooLarge"]

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS entities (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    entity_type TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS observations (
    id INTEGER PRIMARY KEY,
    entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    content TEXT NOT NULL,
    UNIQUE (entity_id, content)
);
CREATE TABLE IF NOT EXISTS relations (
    source_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    target_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    relation_type TEXT NOT NULL,
    PRIMARY KEY (source_id, relation_type, target_id)
);
CREATE INDEX IF NOT EXISTS relations_by_target ON relations(target_id);
"""

# Two full-text indexes, one row per entity and one per observation, kept in step by
# triggers: adding an observation indexes that observation only. (One index row per
# entity holding every observation re-indexed all of them on each insert: 5 000 notes
# on one entity took minutes.)
_FTS_TABLES: Final = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS search_entities "
    "USING fts5(name, entity_type, tokenize = 'unicode61')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS search_observations "
    "USING fts5(content, tokenize = 'unicode61')",
)

_FTS_TRIGGERS: Final = {
    "memory_search_entity_added": """
        CREATE TRIGGER memory_search_entity_added AFTER INSERT ON entities BEGIN
            INSERT INTO search_entities (rowid, name, entity_type)
            VALUES (new.id, new.name, new.entity_type);
        END""",
    "memory_search_entity_removed": """
        CREATE TRIGGER memory_search_entity_removed AFTER DELETE ON entities BEGIN
            DELETE FROM search_entities WHERE rowid = old.id;
        END""",
    "memory_search_observation_added": """
        CREATE TRIGGER memory_search_observation_added AFTER INSERT ON observations BEGIN
            INSERT INTO search_observations (rowid, content) VALUES (new.id, new.content);
        END""",
    "memory_search_observation_removed": """
        CREATE TRIGGER memory_search_observation_removed AFTER DELETE ON observations BEGIN
            DELETE FROM search_observations WHERE rowid = old.id;
        END""",
}

_REBUILD_INDEX: Final = (
    "DELETE FROM search_entities",
    "DELETE FROM search_observations",
    "INSERT INTO search_entities (rowid, name, entity_type) "
    "SELECT id, name, entity_type FROM entities",
    "INSERT INTO search_observations (rowid, content) SELECT id, content FROM observations",
)

# The single index of earlier versions, and its triggers: dropped when a store opens.
_OLD_INDEX: Final = (
    "DROP TRIGGER IF EXISTS memory_entity_added",
    "DROP TRIGGER IF EXISTS memory_entity_removed",
    "DROP TRIGGER IF EXISTS memory_observation_added",
    "DROP TRIGGER IF EXISTS memory_observation_removed",
    "DROP TABLE IF EXISTS search_index",
)

# The bytes the graph holds, kept by triggers in one row so that a change can be held
# to the graph's limit without adding the graph up. Each row counts its text (as UTF-8)
# and ROW_BYTES more, so that empty values are not free.
ROW_BYTES: Final = 32
_SIZE_OF: Final = {
    "entities": "length(CAST({row}.name AS BLOB)) + length(CAST({row}.entity_type AS BLOB))",
    "observations": "length(CAST({row}.content AS BLOB))",
    "relations": "length(CAST({row}.relation_type AS BLOB))",
}
_USAGE_TABLE: Final = (
    "CREATE TABLE IF NOT EXISTS usage (id INTEGER PRIMARY KEY CHECK (id = 0), "
    "bytes INTEGER NOT NULL)"
)
_USAGE_TRIGGERS: Final = {
    f"memory_usage_{table}_{event}": (
        f"CREATE TRIGGER memory_usage_{table}_{event} AFTER {verb} ON {table} BEGIN "
        f"UPDATE usage SET bytes = bytes {sign} ({ROW_BYTES} + "
        f"{size.format(row=row)}) WHERE id = 0; END"
    )
    for table, size in _SIZE_OF.items()
    for event, verb, sign, row in (
        ("added", "INSERT", "+", "new"),
        ("removed", "DELETE", "-", "old"),
    )
}
_COUNT_USAGE: Final = (
    "INSERT OR REPLACE INTO usage (id, bytes) VALUES (0, "
    + " + ".join(
        f"(SELECT coalesce(sum({ROW_BYTES} + {size.format(row=table)}), 0) FROM {table})"
        for table, size in _SIZE_OF.items()
    )
    + ")"
)

#: what search takes for a word
WORD: Final = re.compile(r"\w+")
# One word of a full-text search: in the entity's name or type, or in an observation.
_FTS_WORD: Final = (
    "entities.id IN (SELECT rowid FROM search_entities WHERE search_entities MATCH ?{n} "
    "UNION ALL SELECT o.entity_id FROM observations o WHERE o.id IN ("
    "SELECT rowid FROM search_observations WHERE search_observations MATCH ?{n}))"
)
# One word of a search without FTS5: anywhere in the name, the type or an observation.
_LIKE_WORD: Final = (
    "(name LIKE ?{n} ESCAPE '\\' OR entity_type LIKE ?{n} ESCAPE '\\' OR EXISTS ("
    "SELECT 1 FROM observations o WHERE o.entity_id = entities.id "
    "AND o.content LIKE ?{n} ESCAPE '\\'))"
)


class NotFound(Exception):
    """Entities named in a change do not exist."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = sorted(set(names))
        super().__init__(", ".join(map(repr, self.names)))


class TooLarge(Exception):
    """A result, or the graph after a change, would be over its limit of bytes."""

    def __init__(self, what: str, limit: int, size: int | None = None) -> None:
        #: "result" or "graph"
        self.what = what
        self.limit = limit
        #: the size it would have had, when known (a result stops being counted past it)
        self.size = size
        super().__init__(f"the {what} would be more than {limit} bytes")


@dataclass(frozen=True)
class Limits:
    """What a store holds and answers at most, in bytes."""

    #: the graph: every name, type, observation and relation, and ROW_BYTES per row
    graph_bytes: int
    #: one answer of read_graph, search_nodes or open_nodes, as JSON
    result_bytes: int


def _json_size(text: str) -> int:
    return len(orjson.dumps(text))


# Cancellation reaches a statement through the connection's progress handler, which runs
# in the thread executing the statement: each thread records there why it stopped.
_stopped = threading.local()


def _progress() -> int:
    try:
        check_cancelled()
    except BaseException:
        # Cancelled cannot cross SQLite's C frames: interrupt, and raise it afterwards.
        _stopped.cancelled = True
        return 1
    return 0


class Store:
    """A knowledge graph in one SQLite file."""

    def __init__(self, path: str, *, full_text: bool | None = None, limits: Limits) -> None:
        self.path = path
        self.limits = limits
        self._wanted_full_text = full_text
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._retired = False
        #: whether search uses FTS5 (known once the store was first opened)
        self.full_text = False

    # --- the connection ---------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """The store's connection, in one immediate transaction committed on success.

        One connection serves every worker thread, one transaction at a time: opening
        one per call would checkpoint the WAL (an fsync) every time it closes. A
        cancelled request interrupts its statement and rolls the transaction back.
        """
        with self._lock:
            connection = self._open()
            _stopped.cancelled = False
            committed = False
            try:
                connection.execute("BEGIN IMMEDIATE")
                yield connection
                connection.execute("COMMIT")
                committed = True
            except sqlite3.OperationalError:
                if _stopped.cancelled:
                    check_cancelled()  # raises trio.Cancelled: the request still is
                raise
            finally:
                # SQLite may have rolled back already (a full disk, an interrupt).
                if not committed and connection.in_transaction:
                    connection.execute("ROLLBACK")
                if self._retired:
                    self._close()

    def retire(self) -> None:
        """Close the connection; a transaction still to come opens and closes its own."""
        with self._lock:
            self._retired = True
            self._close()

    def close(self) -> None:
        """Close the connection; the next transaction opens it again."""
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _open(self) -> sqlite3.Connection:
        if self._connection is not None:
            return self._connection
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        connection = sqlite3.connect(
            self.path, timeout=10.0, isolation_level=None, check_same_thread=False
        )
        try:
            connection.execute("PRAGMA foreign_keys = ON")
            connection.execute("PRAGMA journal_mode = WAL")
            # With WAL, NORMAL loses no committed write when the process dies (only on
            # power loss) and spares an fsync per transaction.
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.executescript(_SCHEMA)
            self._prepare_usage(connection)
            self.full_text = self._prepare_index(connection)
            connection.set_progress_handler(_progress, 1000)
            self._connection = connection
        finally:
            if self._connection is not connection:
                connection.close()
        return connection

    def _prepare_usage(self, connection: sqlite3.Connection) -> None:
        present = _triggers(connection)
        counted = connection.execute("SELECT 1 FROM sqlite_master WHERE name = 'usage'")
        if counted.fetchone() is not None and set(_USAGE_TRIGGERS) <= present:
            return
        # A graph written before the graph was counted: count it once.
        with connection:
            connection.execute("BEGIN IMMEDIATE")
            connection.execute(_USAGE_TABLE)
            for name, sql in _USAGE_TRIGGERS.items():
                connection.execute(f"DROP TRIGGER IF EXISTS {name}")
                connection.execute(sql)
            connection.execute(_COUNT_USAGE)

    def _prepare_index(self, connection: sqlite3.Connection) -> bool:
        wanted = self._wanted_full_text is not False
        if wanted:
            try:
                for sql in _FTS_TABLES:
                    connection.execute(sql)
            except sqlite3.OperationalError:
                wanted = False  # this SQLite was built without FTS5
        present = _triggers(connection)
        with connection:
            connection.execute("BEGIN IMMEDIATE")
            if "memory_entity_added" in present or _has_table(connection, "search_index"):
                for sql in _OLD_INDEX:
                    with suppress(sqlite3.OperationalError):  # an index without FTS5 here
                        connection.execute(sql)
            if not wanted:
                for name in _FTS_TRIGGERS:
                    connection.execute(f"DROP TRIGGER IF EXISTS {name}")
                return False
            if not set(_FTS_TRIGGERS) <= present:
                # The index was just made, or writes happened without the triggers.
                for name, sql in _FTS_TRIGGERS.items():
                    connection.execute(f"DROP TRIGGER IF EXISTS {name}")
                    connection.execute(sql)
                for sql in _REBUILD_INDEX:
                    connection.execute(sql)
        return True

    # --- reading ----------------------------------------------------------------------

    def _ids(self, connection: sqlite3.Connection, names: Iterable[str]) -> dict[str, int]:
        wanted = list(dict.fromkeys(names))
        found: dict[str, int] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found.update(
                connection.execute(
                    f"SELECT name, id FROM entities WHERE name IN ({marks})", chunk
                ).fetchall()
            )
        return found

    def _require(self, connection: sqlite3.Connection, names: Iterable[str]) -> dict[str, int]:
        names = list(names)
        ids = self._ids(connection, names)
        missing = [name for name in names if name not in ids]
        if missing:
            raise NotFound(missing)
        return ids

    def _graph(self, connection: sqlite3.Connection, ids: Iterable[int] | None = None) -> Graph:
        """The entities with these ids (every entity for None) and relations touching them.

        Raises:
            TooLarge: the answer would be more than the result limit; it is counted as
                it is read, and never built whole.
        """
        limit = self.limits.result_bytes
        used = 0

        def count(size: int) -> None:
            nonlocal used
            used += size
            if used > limit:
                raise TooLarge("result", limit)

        connection.execute("CREATE TEMP TABLE IF NOT EXISTS chosen (id INTEGER PRIMARY KEY)")
        connection.execute("DELETE FROM chosen")
        if ids is None:
            connection.execute("INSERT INTO chosen SELECT id FROM entities")
        else:
            connection.executemany("INSERT OR IGNORE INTO chosen VALUES (?)", [(i,) for i in ids])
        entities: list[tuple[int, str, str]] = []
        for entity_id, name, kind in connection.execute(
            "SELECT id, name, entity_type FROM entities "
            "WHERE id IN (SELECT id FROM chosen) ORDER BY name"
        ):
            count(_json_size(name) + _json_size(kind) + 48)
            entities.append((entity_id, name, kind))
        observations: dict[int, list[str]] = {row[0]: [] for row in entities}
        for entity_id, content in connection.execute(
            "SELECT entity_id, content FROM observations "
            "WHERE entity_id IN (SELECT id FROM chosen) ORDER BY id"
        ):
            count(_json_size(content) + 1)
            observations[entity_id].append(content)
        relations: list[Relation] = []
        for source, relation_type, target in connection.execute(
            "SELECT s.name, r.relation_type, t.name FROM relations r "
            "JOIN entities s ON s.id = r.source_id JOIN entities t ON t.id = r.target_id "
            "WHERE r.source_id IN (SELECT id FROM chosen) "
            "OR r.target_id IN (SELECT id FROM chosen) "
            "ORDER BY s.name, t.name, r.relation_type"
        ):
            count(_json_size(source) + _json_size(target) + _json_size(relation_type) + 40)
            relations.append({"from": source, "to": target, "relationType": relation_type})
        return {
            "entities": [
                {"name": name, "entityType": kind, "observations": observations[entity_id]}
                for entity_id, name, kind in entities
            ],
            "relations": relations,
        }

    def _check_size(self, connection: sqlite3.Connection) -> None:
        """Raise TooLarge when the graph is over its limit (the change is rolled back)."""
        (size,) = connection.execute("SELECT bytes FROM usage WHERE id = 0").fetchone()
        if size > self.limits.graph_bytes:
            raise TooLarge("graph", self.limits.graph_bytes, size)

    def size(self) -> int:
        """The bytes the graph holds, as its limit counts them."""
        with self.transaction() as connection:
            (size,) = connection.execute("SELECT bytes FROM usage WHERE id = 0").fetchone()
        return int(size)

    def read_graph(self) -> Graph:
        """Every entity and relation."""
        with self.transaction() as connection:
            return self._graph(connection)

    def open_nodes(self, names: Sequence[str]) -> Graph:
        """The named entities (those that exist) and the relations touching them."""
        with self.transaction() as connection:
            return self._graph(connection, self._ids(connection, names).values())

    def search(self, query: str) -> Graph:
        """Entities whose name, type or observations match every word of ``query``."""
        words = list(dict.fromkeys(WORD.findall(query)))
        if not words:
            return {"entities": [], "relations": []}
        with self.transaction() as connection:
            # Each word is its own condition: a full-text lookup per word, or LIKE.
            if self.full_text:  # known once the transaction opened the store
                # Each word quoted (no FTS syntax gets through) and matched as a prefix.
                condition = _FTS_WORD
                params = ['"' + word.replace('"', '""') + '"*' for word in words]
            else:
                condition = _LIKE_WORD
                params = ["%" + re.sub(r"([\\%_])", r"\\\1", word) + "%" for word in words]
            sql = "SELECT id FROM entities WHERE " + " AND ".join(
                condition.format(n=n) for n in range(1, len(words) + 1)
            )
            found = [row[0] for row in connection.execute(sql, params)]
            return self._graph(connection, found)

    # --- changing ---------------------------------------------------------------------

    def create_entities(self, entities: Sequence[NewEntity]) -> tuple[list[Entity], list[str]]:
        """Create entities; return those created and the names that already existed.

        Raises:
            TooLarge: the graph would be over its limit; nothing was created.
        """
        created: list[Entity] = []
        skipped: list[str] = []
        with self.transaction() as connection:
            existing = self._ids(connection, (entity["name"] for entity in entities))
            for entity in entities:
                name, kind = entity["name"], entity["entityType"]
                if name in existing:
                    skipped.append(name)
                    continue
                cursor = connection.execute(
                    "INSERT INTO entities (name, entity_type) VALUES (?, ?)", (name, kind)
                )
                assert cursor.lastrowid is not None
                existing[name] = cursor.lastrowid  # a name given twice is created once
                unique = list(dict.fromkeys(entity.get("observations", [])))
                connection.executemany(
                    "INSERT INTO observations (entity_id, content) VALUES (?, ?)",
                    [(cursor.lastrowid, content) for content in unique],
                )
                created.append({"name": name, "entityType": kind, "observations": unique})
            self._check_size(connection)
        return created, skipped

    def create_relations(
        self, relations: Sequence[Relation]
    ) -> tuple[list[Relation], list[Relation]]:
        """Create relations between existing entities.

        Returns those created and those that already existed.

        Raises:
            NotFound: an end of a relation is not an entity.
            TooLarge: the graph would be over its limit; nothing was created.
        """
        created: list[Relation] = []
        skipped: list[Relation] = []
        with self.transaction() as connection:
            ids = self._require(connection, _ends(relations))
            for relation in relations:
                cursor = connection.execute(
                    "INSERT OR IGNORE INTO relations (source_id, target_id, relation_type) "
                    "VALUES (?, ?, ?)",
                    (ids[relation["from"]], ids[relation["to"]], relation["relationType"]),
                )
                (created if cursor.rowcount else skipped).append(_relation(relation))
            self._check_size(connection)
        return created, skipped

    def add_observations(self, additions: Sequence[ObservationSet]) -> list[ObservationSet]:
        """Add observations to existing entities; return what was new, per entity.

        Raises:
            NotFound: an entity does not exist.
            TooLarge: the graph would be over its limit; nothing was added.
        """
        added: list[ObservationSet] = []
        with self.transaction() as connection:
            ids = self._require(connection, (entry["entityName"] for entry in additions))
            for entry in additions:
                name = entry["entityName"]
                new = [
                    content
                    for content in dict.fromkeys(entry["contents"])
                    if connection.execute(
                        "INSERT OR IGNORE INTO observations (entity_id, content) VALUES (?, ?)",
                        (ids[name], content),
                    ).rowcount
                ]
                added.append({"entityName": name, "contents": new})
            self._check_size(connection)
        return added

    def delete_entities(self, names: Sequence[str]) -> list[str]:
        """Delete entities with their observations and relations; return those deleted."""
        with self.transaction() as connection:
            ids = self._ids(connection, names)
            connection.executemany(
                "DELETE FROM entities WHERE id = ?", [(i,) for i in ids.values()]
            )
        return [name for name in dict.fromkeys(names) if name in ids]

    def delete_observations(
        self, deletions: Sequence[ObservationDeletion]
    ) -> list[ObservationSet]:
        """Delete observations; return what was deleted, per entity (missing ones skipped)."""
        deleted: list[ObservationSet] = []
        with self.transaction() as connection:
            ids = self._ids(connection, (entry["entityName"] for entry in deletions))
            for entry in deletions:
                name = entry["entityName"]
                if name not in ids:
                    continue
                gone = [
                    content
                    for content in dict.fromkeys(entry["observations"])
                    if connection.execute(
                        "DELETE FROM observations WHERE entity_id = ? AND content = ?",
                        (ids[name], content),
                    ).rowcount
                ]
                deleted.append({"entityName": name, "contents": gone})
        return deleted

    def delete_relations(self, relations: Sequence[Relation]) -> list[Relation]:
        """Delete relations; return those that existed."""
        deleted: list[Relation] = []
        with self.transaction() as connection:
            ids = self._ids(connection, _ends(relations))
            for relation in relations:
                source, target = relation["from"], relation["to"]
                if source not in ids or target not in ids:
                    continue
                cursor = connection.execute(
                    "DELETE FROM relations "
                    "WHERE source_id = ? AND target_id = ? AND relation_type = ?",
                    (ids[source], ids[target], relation["relationType"]),
                )
                if cursor.rowcount:
                    deleted.append(_relation(relation))
        return deleted


def _triggers(connection: sqlite3.Connection) -> set[str]:
    return {
        row[0]
        for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
    }


def _has_table(connection: sqlite3.Connection, name: str) -> bool:
    found = connection.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    )
    return found.fetchone() is not None


def _ends(relations: Sequence[Relation]) -> list[str]:
    return [name for relation in relations for name in (relation["from"], relation["to"])]


def _relation(relation: Relation) -> Relation:
    # Only the three fields: a TypedDict argument may carry other keys.
    return {
        "from": relation["from"],
        "to": relation["to"],
        "relationType": relation["relationType"],
    }
