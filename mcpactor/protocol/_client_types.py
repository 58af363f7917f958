# Wire types of the requests a server sends its client: sampling, elicitation, roots.
#
# Kept apart from _types.py so that a server which never asks its client anything does
# not build them at start-up (creating an attrs class costs a fraction of a
# millisecond, which adds up over every class of the package): ``mcpactor`` and
# ``mcpactor.protocol`` import this module the first time one of its names is used.
# Conventions as in _types.py, and likewise no ``from __future__ import annotations``.

from typing import Any, Literal

import attrs

from ._types import AudioContent, ImageContent, Role, TextContent

__all__ = [
    "CreateMessageResult",
    "ElicitResult",
    "ModelHint",
    "ModelPreferences",
    "Root",
    "SamplingMessage",
]


@attrs.frozen(kw_only=True)
class SamplingMessage:
    """A message sent to the client's model in ``sampling/createMessage``."""

    role: Role
    content: TextContent | ImageContent | AudioContent


@attrs.frozen(kw_only=True)
class ModelHint:
    """A model name hint for sampling."""

    name: str | None = None


@attrs.frozen(kw_only=True)
class ModelPreferences:
    """The server's preferences for the client's model choice."""

    hints: list[ModelHint] | None = None
    cost_priority: float | None = None
    speed_priority: float | None = None
    intelligence_priority: float | None = None


@attrs.frozen(kw_only=True)
class CreateMessageResult:
    """What the client's model answered to ``sampling/createMessage``."""

    role: Role
    content: TextContent | ImageContent | AudioContent
    model: str
    stop_reason: str | None = None
    meta: dict[str, Any] | None = None


@attrs.frozen(kw_only=True)
class ElicitResult:
    """The user's answer to ``elicitation/create``."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None


@attrs.frozen(kw_only=True)
class Root:
    """A root the client exposes (``roots/list``)."""

    uri: str
    name: str | None = None
    meta: dict[str, Any] | None = None


# ``mcpactor`` re-exports four of these and shows its public names under its own name
# (see mcpactor/__init__.py); loaded after it did that, they say so themselves.
for _cls in (CreateMessageResult, ElicitResult, Root, SamplingMessage):
    _cls.__module__ = "mcpactor"
del _cls
