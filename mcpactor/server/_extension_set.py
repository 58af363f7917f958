# The extensions a server has enabled: ``server.extensions`` (``Extensions``).
#
# Every server has this collection; the values it holds (``Extension``, its methods and
# notifications, their schemas: _extensions.py) are loaded when the first extension is
# made, so a server without extensions never builds them.

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .._exceptions import ExtensionError, SchemaError
from ..protocol import LATEST, JSONObject, Revision, describe
from ._extension_undo import Undo

if TYPE_CHECKING:
    from ._context import Context
    from ._dispatch import Composable
    from ._extensions import CustomMethod, CustomNotification, Extension
    from ._registered import Registry

__all__ = ["Extensions", "serving"]

_log = logging.getLogger("mcpactor")

# The servers checked as part of a tree that is serving: the servers a server mounts
# start inside its running and were checked with it, not again on their own.
_CHECKED: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar(
    "mcpactor_extensions_checked", default=frozenset()
)


def _has_capability(capabilities: Mapping[str, Any], path: str) -> bool:
    value: Any = capabilities
    for step in path.split("."):
        if not isinstance(value, Mapping) or step not in value:
            return False
        value = value[step]
    return value is not False and value is not None


class Extensions:
    """The extensions a server has enabled (``server.extensions``), in the order enabled.

    Iterate it for the ``Extension`` values; ``in`` takes an identifier or a value.
    """

    __slots__ = ("_enabled", "_server", "notifications", "requests")

    def __init__(self, server: Composable) -> None:
        # The Server itself: what it registers is undone when an extension is refused.
        self._server: Any = server
        self._enabled: dict[str, Extension] = {}
        #: custom request method -> its ``CustomMethod``
        self.requests: dict[str, CustomMethod] = {}
        #: custom notification method -> its ``CustomNotification``
        self.notifications: dict[str, CustomNotification] = {}

    def __repr__(self) -> str:
        return f"<Extensions of {self._server!r}: {', '.join(self._enabled) or 'none'}>"

    def __iter__(self) -> Iterator[Extension]:
        return iter(list(self._enabled.values()))

    def __len__(self) -> int:
        return len(self._enabled)

    def __contains__(self, item: object) -> bool:
        if not isinstance(item, str):
            from ._extensions import Extension

            return isinstance(item, Extension) and self._enabled.get(item.identifier) == item
        return item in self._enabled

    def __getitem__(self, identifier: str) -> Extension:
        return self._enabled[identifier]

    # --- enabling -----------------------------------------------------------------

    def enable(self, *extensions: Extension) -> None:
        """Enable each extension in turn: its methods, its settings, its ``setup``.

        Raises:
            ExtensionError: not an Extension, its identifier is enabled already, or a
                method it adds is a core method or another extension's. Nothing of a
                refused extension stays registered (those before it do).
        """
        for extension in extensions:
            self._enable(extension)

    def _enable(self, extension: Extension) -> None:
        from ._extensions import RESERVED_METHODS, Extension

        if not isinstance(extension, Extension):
            raise ExtensionError(f"not an Extension: {describe(extension)}")
        identifier = extension.identifier
        if identifier in self._enabled:
            raise ExtensionError(f"extension {identifier} is already enabled on {self._server!r}")
        owners = self._method_owners()
        for name in extension.method_names():
            if name in RESERVED_METHODS:
                raise ExtensionError(
                    f"extension {identifier} cannot register {describe(name)}: it is a core "
                    "MCP method"
                )
            if name in owners:
                raise ExtensionError(
                    f"extension {identifier} cannot register {describe(name)}: extension "
                    f"{owners[name]} registered it first"
                )
        # Kept first so that its setup sees it enabled; all of it undone if setup fails.
        with Undo(self._server):
            self._enabled[identifier] = extension
            table = self._server._methods
            for method in extension.methods:
                # Into the server's one method table, beside the core methods.
                self.requests[method.name] = table[method.name] = method
            for notification in extension.notifications:
                self.notifications[notification.name] = notification
            if extension.setup is not None:
                extension.setup(self._server)
        # Last, once nothing can fail: its layers go inside those added before.
        for layer in extension.middleware:
            self._server.middleware.use(layer)
        self._server._served.clear()

    def _method_owners(self) -> dict[str, str]:
        return {
            name: ext.identifier for ext in self._enabled.values() for name in ext.method_names()
        }

    # --- what a composed server has ----------------------------------------------

    def tree(self) -> Iterator[tuple[Composable, Extension]]:
        """Every extension of the server and of the servers it mounts, with its owner."""
        server = self._server
        for extension in self._enabled.values():
            yield server, extension
        for mount in server.mounts:
            child = mount.server
            if isinstance(child.extensions, Extensions):
                yield from child.extensions.tree()

    def owner(self, method: str) -> Composable | None:
        """The server (this one or one it mounts) whose extension serves request ``method``."""
        for server, extension in self.tree():
            if any(m.name == method for m in extension.methods):
                return server
        return None

    def receiver(self, method: str) -> tuple[Composable, CustomNotification] | None:
        """The server and notification that receive ``method`` from a client, if any."""
        for server, extension in self.tree():
            for notification in extension.notifications:
                if notification.name == method and notification.handler is not None:
                    return server, notification
        return None

    def outgoing(self, method: str, params: JSONObject) -> JSONObject:
        """``params`` of notification ``method`` a handler sends, once checked.

        Raises:
            ExtensionError: no extension of this server (or one it mounts) declares it.
            SchemaError: ``params`` break its params schema.
        """
        for _, extension in self.tree():
            for notification in extension.notifications:
                if notification.name == method:
                    from ._extensions import violations

                    errors = notification.violations(params)
                    if errors:
                        raise SchemaError(
                            f"notification {describe(method)} does not match its params "
                            f"schema: {violations(errors)}"
                        )
                    return params
        raise ExtensionError(
            f"{describe(method)} is not a notification of an extension enabled on {self._server!r}"
        )

    async def notified(self, method: str, params: JSONObject, ctx: Context) -> bool:
        """Run the handler of a notification the client sent; False if none receives it.

        A notification has no answer: params that break its schema, or a handler that
        fails, are logged and go no further.
        """
        found = self.receiver(method)
        if found is None:
            return False
        server, notification = found
        from ._extensions import violations, without_meta

        errors = notification.violations(params)
        if errors:
            _log.warning(
                "dropped notification %s: its params break its schema: %s",
                describe(method),
                violations(errors),
            )
            return True
        if server is not self._server:
            ctx = _context_for(ctx, server)
        handler = notification.handler
        assert handler is not None
        try:
            await handler(without_meta(params), ctx)
        except Exception:
            _log.exception("the handler of notification %s failed", describe(method))
        return True

    def capabilities(self, revision: Revision) -> JSONObject | None:
        """This server's own ``capabilities.extensions`` at ``revision`` (None: none)."""
        if not self._enabled or not revision.extension_capabilities:
            return None
        return {i: dict(e.settings) for i, e in self._enabled.items()}

    # --- before serving -----------------------------------------------------------

    def check(self) -> contextvars.Token[frozenset[int]] | None:
        """Check the whole composed server's extensions before it serves.

        Returns the token to reset once serving ends (None: a server that mounts this
        one checked it already).

        Raises:
            ExtensionError: a requirement is not met (naming the extension and what is
                missing), or two extensions of the composed server share an identifier
                or a method.
        """
        checked = _CHECKED.get()
        if id(self._server) in checked:
            return None
        everything = list(self.tree())
        found = self.clashes()
        capabilities = self._server.capabilities(LATEST) if everything else {}
        for _, extension in everything:
            missing = [
                need
                for need in extension.requires
                if not (need in found if "/" in need else _has_capability(capabilities, need))
            ]
            if missing:
                raise ExtensionError(
                    f"extension {extension.identifier} requires "
                    + ", ".join(_what(need) for need in missing)
                    + f", which {self._server!r} does not have"
                )
        servers = {id(self._server)} | {id(m.server) for m in _mounts_under(self._server)}
        return _CHECKED.set(checked | servers)

    def clashes(self, more: Iterable[tuple[Composable, Extension]] = ()) -> dict[str, Composable]:
        """Every identifier of the composed server (and ``more``), with its owner.

        Raises:
            ExtensionError: two extensions of the composed server share an identifier or
                a method.
        """
        found: dict[str, Composable] = {}
        methods: dict[str, str] = {}
        for server, extension in [*self.tree(), *more]:
            other = found.get(extension.identifier)
            if other is not None:
                raise ExtensionError(
                    f"extension {extension.identifier} is enabled twice: on {other!r} and "
                    f"on {server!r}"
                )
            found[extension.identifier] = server
            for name in extension.method_names():
                if name in methods:
                    raise ExtensionError(
                        f"method {describe(name)} is registered by extensions {methods[name]} "
                        f"and {extension.identifier}"
                    )
                methods[name] = extension.identifier
        return found

    @staticmethod
    def checked(token: contextvars.Token[frozenset[int]] | None) -> None:
        """Forget the check ``check`` made (the server stopped serving)."""
        if token is not None:
            _CHECKED.reset(token)


def serving(registry: Registry, extensions: Extensions) -> Callable[[str], bool]:
    """Whether a server serves ``method`` now: an extension's method, or by its registry."""
    requests = extensions.requests
    serves = registry.serves

    def served(method: str) -> bool:
        return method in requests or serves(method)

    return served


def _context_for(ctx: Context, server: Composable) -> Context:
    # The Context a mounted server's handler sees: its own server's.
    return type(ctx)(ctx._peer, ctx.request_id, ctx.negotiated, ctx.meta, server)


def _mounts_under(server: Composable) -> Iterator[Any]:
    for mount in server.mounts:
        yield mount
        if isinstance(mount.server.extensions, Extensions):
            yield from _mounts_under(mount.server.extensions._server)


def _what(need: str) -> str:
    return f"extension {need}" if "/" in need else f"the {need!r} capability"
