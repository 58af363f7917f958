# The tools' arguments and results, with the wire names of the reference memory server.

from __future__ import annotations

from typing import NotRequired, TypedDict

__all__ = [
    "EntitiesCreated",
    "EntitiesDeleted",
    "Entity",
    "Graph",
    "NewEntity",
    "ObservationDeletion",
    "ObservationSet",
    "ObservationsAdded",
    "ObservationsDeleted",
    "Relation",
    "RelationsCreated",
    "RelationsDeleted",
]


class Entity(TypedDict):
    """A node of the graph: a name, a type and what is known about it."""

    name: str
    entityType: str
    observations: list[str]


class NewEntity(TypedDict):
    """An entity to create."""

    name: str
    entityType: str
    observations: NotRequired[list[str]]


# "from" is a keyword: this TypedDict can only be spelt the functional way.
Relation = TypedDict("Relation", {"from": str, "to": str, "relationType": str})


class ObservationSet(TypedDict):
    """Observations of one entity."""

    entityName: str
    contents: list[str]


class ObservationDeletion(TypedDict):
    """Observations to delete from one entity."""

    entityName: str
    observations: list[str]


class Graph(TypedDict):
    """Entities, and the relations that touch them."""

    entities: list[Entity]
    relations: list[Relation]


class EntitiesCreated(TypedDict):
    """The entities created, and the names skipped because they already existed."""

    created: list[Entity]
    skipped: list[str]


class RelationsCreated(TypedDict):
    """The relations created, and those skipped because they already existed."""

    created: list[Relation]
    skipped: list[Relation]


class ObservationsAdded(TypedDict):
    """The observations that were new, per entity."""

    added: list[ObservationSet]


class EntitiesDeleted(TypedDict):
    """The names of the entities deleted (missing names are ignored)."""

    deleted: list[str]


class ObservationsDeleted(TypedDict):
    """The observations deleted, per entity."""

    deleted: list[ObservationSet]


class RelationsDeleted(TypedDict):
    """The relations deleted (missing ones are ignored)."""

    deleted: list[Relation]
