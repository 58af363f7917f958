# The routing table of a composed server: one merged catalogue, and the owner of every
# name and URI in it.
#
# Tools and prompts are exposed as ``<prefix>_<name>`` (or as they are, without a
# prefix); resource URIs and templates are never rewritten, and a URI matching no exact
# resource goes to the first template matching it (the parent's own first, then the
# children in mount order). A name or URI served by two owners is a problem naming both.

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from .._exceptions import SchemaError
from ..protocol import JSONObject, Revision, describe
from ._dispatch import Composable
from ._mount import Mount
from ._registry import Catalog, Listed, ListedTemplate, check_tool_name
from ._scopes import scopes_of
from ._transform import TransformedTool, transform_tool
from ._uritemplate import UriTemplate

__all__ = ["Renamed", "Route", "Table", "build_table", "merge_into", "problem_report"]


@attrs.frozen
class Renamed:
    """A child's tool or prompt under the name the parent exposes it by."""

    entry: Listed
    name: str

    def wire(self, revision: Revision) -> JSONObject:
        return {**self.entry.wire(revision), "name": self.name}

    @property
    def scopes(self) -> tuple[str, ...]:
        """The scopes of the entry it renames: a mounted server's tools keep theirs."""
        return scopes_of(self.entry)


@attrs.frozen
class Route:
    """Where a tool or prompt the parent exposes is served."""

    mount: Mount | None  # None: the parent's own
    name: str  # the name the owner knows it by
    #: the transformation it is exposed under (tools of a mount with ``tools``)
    transform: TransformedTool | None = None


@attrs.define
class Table:
    """The parent's merged catalogue, and the owner of each name and URI in it."""

    tools: dict[str, Route] = attrs.Factory(dict)
    prompts: dict[str, Route] = attrs.Factory(dict)
    resources: dict[str, Mount | None] = attrs.Factory(dict)
    templates: dict[str, Mount | None] = attrs.Factory(dict)
    matchers: list[tuple[UriTemplate, Mount | None]] = attrs.Factory(list)
    listed_tools: dict[str, Listed] = attrs.Factory(dict)
    listed_prompts: dict[str, Listed] = attrs.Factory(dict)
    listed_resources: dict[str, Listed] = attrs.Factory(dict)
    listed_templates: dict[str, ListedTemplate] = attrs.Factory(dict)
    problems: list[str] = attrs.Factory(list)

    def catalog(self) -> Catalog:
        return Catalog(
            self.listed_tools, self.listed_prompts, self.listed_resources, self.listed_templates
        )


def build_table(parent: Composable, mounts: Sequence[Mount], *, started: bool = False) -> Table:
    """The routing table of ``parent`` and its ``mounts``, with every clash in ``problems``.

    ``started``: the children run, so their lists are complete (a proxied server's is
    empty before): a transformation of a tool none of them has is a problem too.
    """
    table = Table()
    _add_catalog(table, parent.name, None, parent._registry.catalog())
    for mount in mounts:
        catalog = mount.server._catalog()
        made: dict[str, TransformedTool] = {}
        if mount.tools:
            catalog = _transformed(table, parent.name, mount, catalog, made, started=started)
        _add_catalog(table, parent.name, mount, catalog, made)
    return table


def _transformed(
    table: Table,
    parent: str,
    mount: Mount,
    catalog: Catalog,
    made: dict[str, TransformedTool],
    *,
    started: bool,
) -> Catalog:
    # The child's tools as the mount exposes them: hidden ones left out, transformed ones
    # replaced by entries of their own (keyed by their new unprefixed name, also in
    # ``made``: a child's catalogue may hold transformed tools of its own mounts).
    tools: dict[str, Listed] = {}
    # exposed name -> the child's tool it is, to name both when two would share one
    sources: dict[str, str] = {}
    transforms = mount.tools
    owner = _owner(parent, mount)

    def add(name: str, entry: Listed, source: str) -> None:
        taken = sources.get(name)
        if taken is not None:
            table.problems.append(
                f"tool {describe(mount.expose(name))} is served twice: by {owner}'s tools "
                f"{describe(taken)} and {describe(source)} (transformed)"
            )
            return
        sources[name] = source
        tools[name] = entry

    for name, entry in catalog.tools.items():
        transform = transforms.get(name)
        if transform is None or transform.keep_original:
            add(name, entry, name)
        if transform is None or transform.hide:
            continue
        new_name = transform.name or name
        try:
            made[new_name] = transform_tool(mount.expose(new_name), name, entry, transform)
        except SchemaError as exc:
            table.problems.append(f"{owner}: {exc}")
            continue
        add(new_name, made[new_name], name)
    if started:
        for name in sorted(set(transforms) - set(catalog.tools)):
            table.problems.append(f"{owner} has no tool {describe(name)} to transform")
    return Catalog(tools, catalog.prompts, catalog.resources, catalog.templates)


def _add_catalog(
    table: Table,
    parent: str,
    mount: Mount | None,
    catalog: Catalog,
    made: Mapping[str, TransformedTool] | None = None,
) -> None:
    owner = _owner(parent, mount)
    for kind, entries, routes, listed in (
        ("tool", catalog.tools, table.tools, table.listed_tools),
        ("prompt", catalog.prompts, table.prompts, table.listed_prompts),
    ):
        for name, entry in entries.items():
            exposed = mount.expose(name) if mount is not None else name
            if kind == "tool":
                try:
                    check_tool_name(exposed)
                except SchemaError as exc:
                    table.problems.append(f"tool {describe(name)} of {owner}: {exc}")
                    continue
            taken = routes.get(exposed)
            if taken is not None:
                table.problems.append(
                    f"{kind} {describe(exposed)} is served twice: by "
                    f"{_owner(parent, taken.mount)} "
                    f"(its {kind} {describe(taken.name)}) and by {owner} (its {kind} "
                    f"{describe(name)})"
                )
                continue
            if made and made.get(name) is entry:
                assert isinstance(entry, TransformedTool)
                routes[exposed] = Route(mount, entry.source, entry)
                listed[exposed] = entry
                continue
            routes[exposed] = Route(mount, name)
            listed[exposed] = Renamed(entry, exposed) if exposed != name else entry
    for uri, resource in catalog.resources.items():
        if uri in table.resources:
            table.problems.append(
                f"resource {describe(uri)} is served twice: by "
                f"{_owner(parent, table.resources[uri])} and by {owner}"
            )
            continue
        table.resources[uri] = mount
        table.listed_resources[uri] = resource
    for uri, template in catalog.templates.items():
        if uri in table.templates:
            table.problems.append(
                f"resource template {describe(uri)} is served twice: by "
                f"{_owner(parent, table.templates[uri])} and by {owner}"
            )
            continue
        table.templates[uri] = mount
        table.listed_templates[uri] = template
        parsed = template.template
        if parsed is not None:
            table.matchers.append((parsed, mount))


def _owner(parent: str, mount: Mount | None) -> str:
    return repr(mount.name if mount is not None else parent)


def merge_into(merged: JSONObject, extra: Mapping[str, Any]) -> None:
    """Merge capabilities: objects key by key, flags or-ed, anything else the first value."""
    for key, value in extra.items():
        current = merged.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            merge_into(current, value)
        elif isinstance(value, bool) and isinstance(current, bool):
            merged[key] = current or value
        elif key not in merged:
            merged[key] = copy.deepcopy(value)


def problem_report(label: str | None, problems: list[str]) -> str:
    """The error message of mounting ``label`` (None: of starting) with ``problems``."""
    head = (
        f"cannot mount {describe(label)}" if label is not None else "the mounted servers collide"
    )
    lines = [head, *(f"  {problem}" for problem in problems)]
    lines.append("  give them different prefixes, or rename one of them")
    return "\n".join(lines)
