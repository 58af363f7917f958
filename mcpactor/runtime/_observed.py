# Session owners registering with the run's Observatory while they serve (``observed``).
#
# Every transport registers what it serves; only a run with an Observatory installed
# (``serve --admin``) records anything, so the Observatory and the snapshot it reads
# (_snapshot.py) are loaded by whoever makes one, not by every start.

from __future__ import annotations

from typing import Protocol

import trio

__all__ = ["CURRENT", "Registrar", "observed"]


class Registrar(Protocol):
    """What owners register with: the Observatory (_snapshot.py) installed in the run."""

    def _add(self, thing: object, transport: str) -> None: ...

    def _remove(self, thing: object) -> None: ...


#: the Observatory installed in this trio run (``Observatory.install``)
CURRENT: trio.lowlevel.RunVar[Registrar] = trio.lowlevel.RunVar("mcpactor.observatory")


class _Registration:
    # Both a context manager and an async one: owners hold it around what they run.
    __slots__ = ("_observatory", "_things", "_transport")

    def __init__(
        self, observatory: Registrar | None, things: tuple[object, ...], transport: str
    ) -> None:
        self._observatory = observatory
        self._things = things
        self._transport = transport

    def __enter__(self) -> None:
        if self._observatory is not None:
            for thing in self._things:
                self._observatory._add(thing, self._transport)

    def __exit__(self, *exc: object) -> None:
        if self._observatory is not None:
            for thing in self._things:
                self._observatory._remove(thing)

    async def __aenter__(self) -> None:
        self.__enter__()

    async def __aexit__(self, *exc: object) -> None:
        self.__exit__()


def observed(*things: object, transport: str = "stdio") -> _Registration:
    """Register session owners with this run's Observatory while the block runs.

    A ``SessionManager``, a ``SessionActor`` (a session of its own, over ``transport``),
    a ``StatelessHost`` or a ``ProcessPool``; nothing happens without an Observatory.
    """
    try:
        observatory: Registrar | None = CURRENT.get()
    except LookupError:
        observatory = None
    return _Registration(observatory, things, transport)
