# The knowledge graph in SQLite: entities, their observations, relations between them.
#
# Every call opens its own connection (tools run in worker threads, and a connection
# belongs to one thread) and does its work in one transaction, so a failure changes
# nothing. Entities have an INTEGER PRIMARY KEY so their ids survive VACUUM; deleting one
# cascades to its observations and relations.
#
# Search uses an FTS5 index when SQLite has the module: triggers keep one index row per
# entity (name, type, every observation) in step with the tables. Without FTS5 (or with
# it switched off) the triggers are dropped and search falls back to LIKE; switching
# back on rebuilds the index from the tables.

from __future__ import annotations

import os
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Final

from ._shapes import Entity, Graph, NewEntity, ObservationDeletion, ObservationSet, Relation

__all__ = ["NotFound", "Store"]

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

_FTS_TABLE: Final = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS search_index "
    "USING fts5(name, entity_type, observations, tokenize = 'unicode61')"
)

_OBSERVATIONS_OF: Final = (
    "coalesce((SELECT group_concat(content, char(10)) FROM observations "
    "WHERE entity_id = {id}), '')"
)

_FTS_TRIGGERS: Final = {
    "memory_entity_added": """
        CREATE TRIGGER memory_entity_added AFTER INSERT ON entities BEGIN
            INSERT INTO search_index (rowid, name, entity_type, observations)
            VALUES (new.id, new.name, new.entity_type, '');
        END""",
    "memory_entity_removed": """
        CREATE TRIGGER memory_entity_removed AFTER DELETE ON entities BEGIN
            DELETE FROM search_index WHERE rowid = old.id;
        END""",
    "memory_observation_added": f"""
        CREATE TRIGGER memory_observation_added AFTER INSERT ON observations BEGIN
            UPDATE search_index SET observations = {_OBSERVATIONS_OF.format(id="new.entity_id")}
            WHERE rowid = new.entity_id;
        END""",
    "memory_observation_removed": f"""
        CREATE TRIGGER memory_observation_removed AFTER DELETE ON observations BEGIN
            UPDATE search_index SET observations = {_OBSERVATIONS_OF.format(id="old.entity_id")}
            WHERE rowid = old.entity_id;
        END""",
}

_REBUILD_INDEX: Final = f"""
    INSERT INTO search_index (rowid, name, entity_type, observations)
    SELECT id, name, entity_type, {_OBSERVATIONS_OF.format(id="entities.id")} FROM entities
"""

_WORD: Final = re.compile(r"\w+")
# One word of a search without FTS5: anywhere in the name, the type or an observation.
_LIKE_WORD: Final = (
    "(name LIKE ?1 ESCAPE '\\' OR entity_type LIKE ?1 ESCAPE '\\' OR EXISTS ("
    "SELECT 1 FROM observations o WHERE o.entity_id = entities.id "
    "AND o.content LIKE ?1 ESCAPE '\\'))"
)


class NotFound(Exception):
    """Entities named in a change do not exist."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = sorted(set(names))
        super().__init__(", ".join(map(repr, self.names)))


class Store:
    """A knowledge graph in one SQLite file."""

    def __init__(self, path: str, *, full_text: bool | None = None) -> None:
        self.path = path
        self._wanted_full_text = full_text
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        #: whether search uses FTS5 (known once the store was first opened)
        self.full_text = False

    # --- the connection ---------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """The store's connection, in one immediate transaction committed on success.

        One connection serves every worker thread, one transaction at a time: opening
        one per call would checkpoint the WAL (an fsync) every time it closes.
        """
        with self._lock:
            connection = self._open()
            connection.execute("BEGIN IMMEDIATE")
            committed = False
            try:
                yield connection
                connection.execute("COMMIT")
                committed = True
            finally:
                # SQLite may have rolled back already (a full disk, an interrupt).
                if not committed and connection.in_transaction:
                    connection.execute("ROLLBACK")

    def close(self) -> None:
        """Close the connection; the next transaction opens it again."""
        with self._lock:
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
            self.full_text = self._prepare_index(connection)
            self._connection = connection
        finally:
            if self._connection is not connection:
                connection.close()
        return connection

    def _prepare_index(self, connection: sqlite3.Connection) -> bool:
        wanted = self._wanted_full_text is not False
        if wanted:
            try:
                connection.execute(_FTS_TABLE)
            except sqlite3.OperationalError:
                wanted = False  # this SQLite was built without FTS5
        present = {
            row[0]
            for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        }
        with connection:
            connection.execute("BEGIN IMMEDIATE")
            if not wanted:
                for name in _FTS_TRIGGERS:
                    connection.execute(f"DROP TRIGGER IF EXISTS {name}")
                return False
            if not set(_FTS_TRIGGERS) <= present:
                # The index was just made, or writes happened without the triggers.
                for name, sql in _FTS_TRIGGERS.items():
                    connection.execute(f"DROP TRIGGER IF EXISTS {name}")
                    connection.execute(sql)
                connection.execute("DELETE FROM search_index")
                connection.execute(_REBUILD_INDEX)
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
        """The entities with these ids (every entity for None) and relations touching them."""
        connection.execute("CREATE TEMP TABLE IF NOT EXISTS chosen (id INTEGER PRIMARY KEY)")
        connection.execute("DELETE FROM chosen")
        if ids is None:
            connection.execute("INSERT INTO chosen SELECT id FROM entities")
        else:
            connection.executemany("INSERT OR IGNORE INTO chosen VALUES (?)", [(i,) for i in ids])
        entities = connection.execute(
            "SELECT id, name, entity_type FROM entities "
            "WHERE id IN (SELECT id FROM chosen) ORDER BY name"
        ).fetchall()
        observations: dict[int, list[str]] = {row[0]: [] for row in entities}
        for entity_id, content in connection.execute(
            "SELECT entity_id, content FROM observations "
            "WHERE entity_id IN (SELECT id FROM chosen) ORDER BY id"
        ):
            observations[entity_id].append(content)
        relations: list[Relation] = [
            {"from": source, "to": target, "relationType": relation_type}
            for source, relation_type, target in connection.execute(
                "SELECT s.name, r.relation_type, t.name FROM relations r "
                "JOIN entities s ON s.id = r.source_id JOIN entities t ON t.id = r.target_id "
                "WHERE r.source_id IN (SELECT id FROM chosen) "
                "OR r.target_id IN (SELECT id FROM chosen) "
                "ORDER BY s.name, t.name, r.relation_type"
            )
        ]
        return {
            "entities": [
                {"name": name, "entityType": kind, "observations": observations[entity_id]}
                for entity_id, name, kind in entities
            ],
            "relations": relations,
        }

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
        words = _WORD.findall(query)
        if not words:
            return {"entities": [], "relations": []}
        with self.transaction() as connection:
            if self.full_text:  # known once the transaction opened the store
                # Each word quoted (no FTS syntax gets through) and matched as a prefix.
                sql = "SELECT rowid FROM search_index WHERE search_index MATCH ?"
                params = [" ".join('"' + word.replace('"', '""') + '"*' for word in words)]
            else:
                sql = "SELECT id FROM entities WHERE " + " AND ".join(
                    _LIKE_WORD.replace("?1", f"?{n}") for n in range(1, len(words) + 1)
                )
                params = ["%" + re.sub(r"([\\%_])", r"\\\1", word) + "%" for word in words]
            found = [row[0] for row in connection.execute(sql, params)]
            return self._graph(connection, found)

    # --- changing ---------------------------------------------------------------------

    def create_entities(self, entities: Sequence[NewEntity]) -> tuple[list[Entity], list[str]]:
        """Create entities; return those created and the names that already existed."""
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
        return created, skipped

    def create_relations(
        self, relations: Sequence[Relation]
    ) -> tuple[list[Relation], list[Relation]]:
        """Create relations between existing entities.

        Returns those created and those that already existed.

        Raises:
            NotFound: an end of a relation is not an entity.
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
        return created, skipped

    def add_observations(self, additions: Sequence[ObservationSet]) -> list[ObservationSet]:
        """Add observations to existing entities; return what was new, per entity.

        Raises:
            NotFound: an entity does not exist.
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


def _ends(relations: Sequence[Relation]) -> list[str]:
    return [name for relation in relations for name in (relation["from"], relation["to"])]


def _relation(relation: Relation) -> Relation:
    # Only the three fields: a TypedDict argument may carry other keys.
    return {
        "from": relation["from"],
        "to": relation["to"],
        "relationType": relation["relationType"],
    }
