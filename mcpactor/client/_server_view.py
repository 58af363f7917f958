# What a client knows of the server it talks to, read live from the protocol core.
#
# ``ClientSession.server`` is this view: the revision in use and its era, the server's
# info and capabilities, and the answers they came in (``initialize`` or
# ``server/discover``). It sends nothing and changes nothing: the session's
# ``initialize``, ``start`` and ``set_logging_level`` do.

from __future__ import annotations

from typing import final

from ..protocol import ClientSessionCore, JSONObject

__all__ = ["ServerView"]


@final
class ServerView:
    """The server as this client knows it: what it said of itself and what was agreed."""

    __slots__ = ("_core",)

    def __init__(self, core: ClientSessionCore) -> None:
        self._core = core

    def __repr__(self) -> str:
        return f"<ServerView {self.info!r} at {self.protocol_version}>"

    @property
    def info(self) -> JSONObject | None:
        """The server's ``serverInfo``, or None before ``initialize`` (or discovery)."""
        return self._core.server_info

    @property
    def capabilities(self) -> JSONObject:
        """The capabilities the server declared (empty before ``initialize`` or discovery)."""
        return self._core.server_capabilities

    @property
    def protocol_version(self) -> str | None:
        """The revision in use (chosen by ``initialize`` or discovery), or None before."""
        revision = self._core.revision
        return None if revision is None else revision.version

    @property
    def stateless(self) -> bool:
        """Whether a revision without sessions is in use (each request carries its envelope)."""
        return self._core.stateless

    @property
    def initialize_result(self) -> JSONObject | None:
        """The ``initialize`` result, once initialized."""
        return self._core.initialize_result

    @property
    def discover_result(self) -> JSONObject | None:
        """The ``server/discover`` result, once a stateless revision was chosen by it."""
        return self._core.discover_result

    @property
    def log_level(self) -> str | None:
        """The level the server logs at for us at a stateless revision (None: no logs).

        Every request says it in its envelope; ``set_logging_level`` changes it.
        """
        return self._core.log_level
