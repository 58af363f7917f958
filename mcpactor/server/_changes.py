# Where a Server's changes are announced: to what was built from its lists, and to every
# session listening.
#
# A registration at run time (or a mounted server's, relayed) makes the registry forget
# what it worked out, the server the methods it found served, the handlers their list
# pages and the composition its routing table, then each listening session (a
# ``ServerListener``) hears of it and sends ``list_changed``. ``Changes`` is itself a
# ``ServerListener``: a parent listens to the servers it mounts with its own.

from __future__ import annotations

from typing import TYPE_CHECKING

from ._dispatch import ServedMethods, ServerListener
from ._handlers import Handlers
from ._registered import Registry

if TYPE_CHECKING:
    from ._compose import Composition

__all__ = ["Changes"]


class Changes:
    """A server's listeners, and what its changes invalidate."""

    def __init__(self, registry: Registry, handlers: Handlers, served: ServedMethods) -> None:
        self._registry = registry
        self._handlers = handlers
        self._served = served
        #: the sessions (and parents) told about list changes and resource updates
        self.listeners: set[ServerListener] = set()
        #: the servers mounted in this one, once it mounts any
        self.composition: Composition | None = None

    def list_changed(self, kind: str) -> None:
        """The list of ``tools``, ``resources`` or ``prompts`` changed."""
        self._registry.changed(kind)
        self._served.clear()
        self._handlers.forget_pages(kind)
        if self.composition is not None:
            self.composition.invalidate()
        for listener in list(self.listeners):
            listener.list_changed(kind)

    def resource_updated(self, uri: str) -> None:
        """The resource at ``uri`` changed: tell every listener."""
        for listener in list(self.listeners):
            listener.resource_updated(uri)
