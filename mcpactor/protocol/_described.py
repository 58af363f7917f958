# The wire types that describe rather than carry: an implementation, a tool's hints, a
# completion's values.
#
# Apart from _types.py because no server reads them while it starts: a tool's hints are
# unstructured as they are registered, a completion is checked when a completer answers,
# and an Implementation is what a client reads. Importing this module builds them.
# No ``from __future__ import annotations``, as in _types.py.

import attrs

from ._types import Icon

__all__ = ["Completion", "Implementation", "ToolAnnotations"]


@attrs.frozen(kw_only=True)
class Implementation:
    """The name and version of an MCP implementation (``serverInfo`` / ``clientInfo``)."""

    name: str
    version: str
    title: str | None = None
    description: str | None = None
    website_url: str | None = None
    icons: list[Icon] | None = None


@attrs.frozen(kw_only=True)
class ToolAnnotations:
    """Hints about a tool's behaviour; clients must not trust them from untrusted servers."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


@attrs.frozen(kw_only=True)
class Completion:
    """Suggested values for ``completion/complete``."""

    values: list[str]
    total: int | None = None
    has_more: bool | None = None
