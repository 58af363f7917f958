# A server made from an OpenAPI document, as the configuration file and the command line
# name it: ``[servers.X] openapi = "file-or-url"`` with its table of settings, or the
# target ``openapi:FILE-OR-URL``.

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

from ._reader import Reader

__all__ = ["OPENAPI_KEYS", "OpenAPIConfig", "is_openapi_target", "openapi_config"]

#: the keys of a ``[servers.X]`` table that only apply with ``openapi``
OPENAPI_KEYS: Final = frozenset(
    {"base_url", "route_map", "names", "request_timeout", "max_response_bytes"}
)
_ROUTE_KEYS: Final = frozenset({"kind", "methods", "pattern", "tags", "operation_ids"})
_DOCUMENT_ENDINGS: Final = (".json", ".yaml", ".yml")


@attrs.frozen
class OpenAPIConfig:
    """What ``from_openapi`` is given for one configured server."""

    #: the document: a path or an http(s) URL
    document: str
    base_url: str | None = None
    #: the route map, as tables of Route's fields
    route_map: tuple[Mapping[str, Any], ...] = ()
    names: Mapping[str, str] = attrs.field(factory=dict)
    request_timeout: float | None = 30.0
    max_response_bytes: int = 4 * 1024 * 1024

    def build(self, name: str, headers: Mapping[str, str]) -> Any:
        """The Server this configuration describes."""
        from ..openapi import Route, from_openapi

        return from_openapi(
            self.document,
            name=name,
            base_url=self.base_url,
            headers=headers,
            route_map=[Route(**dict(route)) for route in self.route_map],
            names=self.names,
            timeout=self.request_timeout,
            max_response_bytes=self.max_response_bytes,
        )


def is_openapi_target(target: str) -> bool:
    """Whether a command-line target is ``openapi:`` and a document's path or URL."""
    kind, colon, rest = target.partition(":")
    return (
        kind == "openapi"
        and bool(colon)
        and (rest.startswith(("http://", "https://")) or rest.lower().endswith(_DOCUMENT_ENDINGS))
    )


def openapi_config(reader: Reader, table: Mapping[str, Any]) -> OpenAPIConfig:
    """The ``openapi`` settings of one ``[servers.X]`` table."""
    document = reader.optional(table, "openapi", str)
    assert document is not None
    if not document.startswith(("http://", "https://")):
        document = str(reader.directory / document)
    routes = []
    raw_routes = table.get("route_map", [])
    if not isinstance(raw_routes, list) or not all(isinstance(r, dict) for r in raw_routes):
        raise reader.error("route_map", "expected a list of tables", raw_routes)
    for index, route in enumerate(raw_routes):
        # Named as TOML writes an array's item: servers.api.route_map[0].kind
        inner = Reader(reader.source, f"{reader.prefix}.route_map[{index}]")
        inner.known(route, _ROUTE_KEYS)
        inner.choice(route, "kind", ("tool", "resource", "exclude"), "tool")
        for key in ("methods", "tags", "operation_ids"):
            inner.string_list(route, key)
        inner.optional(route, "pattern", str)
        routes.append(dict(route))
    limit = reader.optional(table, "max_response_bytes", int, 4 * 1024 * 1024)
    if isinstance(limit, bool) or limit < 1:
        raise reader.error("max_response_bytes", "expected a positive integer", limit)
    return OpenAPIConfig(
        document=document,
        base_url=reader.optional(table, "base_url", str),
        route_map=tuple(routes),
        names=reader.strings(table, "names"),
        request_timeout=reader.seconds(table, "request_timeout") or 30.0,
        max_response_bytes=limit,
    )
