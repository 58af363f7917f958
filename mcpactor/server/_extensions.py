# Extensions (SEP-2133) as values a server enables: ``Extension`` and ``server.extensions``.
#
# An extension is declared once, as a frozen value: its namespaced identifier, the
# settings it puts under ``capabilities.extensions``, what it needs of the final
# configuration (core capabilities, other extensions), the request and notification
# methods it adds with their schemas, and a ``setup`` that registers the tools,
# resources and prompts it needs. A server enables it (``Server(extensions=[...])`` or
# ``server.extensions.enable(ext)``); everything is checked before anything is kept, so
# a refused extension leaves nothing behind, and its requirements are checked when the
# server starts (``Server.running``), against the whole composed server.
#
# Custom request methods go into the server's one method table (_dispatch.py), so they
# are served as core ones are, in both eras, with their validation added here (params ->
# -32602, a result breaking its schema -> -32603); client notifications reach
# ``notified``, a handler's go out through ``Context.notify``; middleware joins the
# server's one chain (_middleware.py).

from __future__ import annotations

import contextvars
import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

import attrs
import orjson

from .._exceptions import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    ExtensionError,
    RequestError,
    SchemaError,
)
from ..protocol import (
    CORE_METHODS,
    LATEST,
    STATUS_NOTIFICATION,
    TASK_EXTENSION_METHODS,
    JSONObject,
    Revision,
    describe,
)
from ._extension_undo import Undo
from ._registry import compile_validator
from ._validation import SchemaValidator

if TYPE_CHECKING:
    from ._context import Context
    from ._dispatch import Composable
    from ._middleware import Middleware
    from ._registered import Registry

__all__ = [
    "RESERVED_METHODS",
    "CustomMethod",
    "CustomNotification",
    "Extension",
    "Extensions",
    "check_identifier",
    "serving",
]

_log = logging.getLogger("mcpactor")

#: the methods no extension may register: the core protocol's, and the tasks
#: extension's that mcpactor serves itself
RESERVED_METHODS: Final = CORE_METHODS | {*TASK_EXTENSION_METHODS, STATUS_NOTIFICATION}

# SEP-2133: ``{vendor-prefix}/{extension-name}``, named as ``_meta`` keys are, with the
# prefix mandatory: dot-separated labels (a letter first, a letter or digit last,
# hyphens inside), then a name of letters, digits, '-', '_', '.' that starts and ends
# with a letter or digit.
_LABEL: Final = r"[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_IDENTIFIER: Final = re.compile(
    rf"{_LABEL}(?:\.{_LABEL})*/[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
)
_MAX_IDENTIFIER: Final = 256
# A core capability a requirement names: ``tools``, ``resources.subscribe``, …
_CAPABILITY_PATH: Final = re.compile(r"[A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z][A-Za-z0-9_]*)*")
_MAX_METHOD: Final = 256

# The servers checked as part of a tree that is serving: the servers a server mounts
# start inside its running and were checked with it, not again on their own.
_CHECKED: contextvars.ContextVar[frozenset[int]] = contextvars.ContextVar(
    "mcpactor_extensions_checked", default=frozenset()
)

#: a custom request's handler: its params (without ``_meta``) and Context in, its result out
RequestHandler = Callable[[JSONObject, "Context"], Awaitable[JSONObject]]
#: a custom notification's handler: its params (without ``_meta``) and Context
NotificationHandler = Callable[[JSONObject, "Context"], Awaitable[None]]

_ANY_OBJECT: Final[JSONObject] = {"type": "object"}


def check_identifier(identifier: object) -> str:
    """Return ``identifier`` if it is a SEP-2133 extension identifier; else ExtensionError."""
    if (
        type(identifier) is not str
        or len(identifier) > _MAX_IDENTIFIER
        or not _IDENTIFIER.fullmatch(identifier)
    ):
        raise ExtensionError(
            f"invalid extension identifier {describe(identifier)}: use "
            "'{vendor-prefix}/{name}', e.g. 'com.example/search' (a reversed domain you "
            "control, then letters, digits, '-', '_' or '.')"
        )
    return identifier


def _check_method(name: object, what: str) -> str:
    if type(name) is not str or not name or len(name) > _MAX_METHOD or not name.isprintable():
        raise ExtensionError(f"invalid {what} name {describe(name)}: a printable string")
    if name.startswith("rpc."):
        raise ExtensionError(f"{what} {describe(name)}: JSON-RPC reserves names starting 'rpc.'")
    return name


def _request_name(name: object) -> str:
    return _check_method(name, "request method")


def _notification_name(name: object) -> str:
    return _check_method(name, "notification")


def _schema(value: object, what: str) -> SchemaValidator:
    if type(value) is not dict:
        raise ExtensionError(f"{what} must be a JSON Schema object, got {type(value).__name__}")
    return compile_validator(value, what=what)


def _without_meta(params: JSONObject) -> JSONObject:
    return {k: v for k, v in params.items() if k != "_meta"} if "_meta" in params else params


def _violations(errors: list[JSONObject]) -> str:
    return "; ".join(f"{e['path']}: {e['message']}" for e in errors)


@attrs.frozen
class CustomMethod:
    """A request method an extension adds: its handler and its params and result schemas."""

    name: str = attrs.field(converter=_request_name)
    #: ``async handler(params, ctx) -> result``; params come without ``_meta``
    handler: RequestHandler
    params_schema: JSONObject = attrs.field(factory=lambda: dict(_ANY_OBJECT))
    result_schema: JSONObject = attrs.field(factory=lambda: dict(_ANY_OBJECT))
    description: str = ""
    _params: SchemaValidator = attrs.field(init=False, eq=False, repr=False)
    _result: SchemaValidator = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if not callable(self.handler):
            raise ExtensionError(f"the handler of {describe(self.name)} is not callable")
        params = _schema(self.params_schema, f"params schema of {self.name}")
        result = _schema(self.result_schema, f"result schema of {self.name}")
        object.__setattr__(self, "_params", params)
        object.__setattr__(self, "_result", result)

    async def __call__(self, params: JSONObject, ctx: Context) -> JSONObject:
        """Serve one request: params checked, the handler run, its result checked."""
        given = _without_meta(params)
        errors = self._params.errors(given)
        if errors:
            raise RequestError(
                INVALID_PARAMS,
                f"invalid params for {describe(self.name)}: {_violations(errors)}",
                {"method": self.name, "errors": errors},
            )
        result = await self.handler(given, ctx)
        if type(result) is not dict:
            broken = f"a {type(result).__name__}, not an object"
        else:
            errors = self._result.errors(_without_meta(result))
            if not errors:
                return result
            broken = _violations(errors)
        _log.error("%s returned a result that breaks its result schema: %s", self.name, broken)
        raise RequestError(
            INTERNAL_ERROR,
            f"{describe(self.name)} returned a result that breaks its result schema: {broken}",
            {"method": self.name},
        )


@attrs.frozen
class CustomNotification:
    """A notification method an extension adds, with its params schema.

    With a ``handler`` the server receives it from clients; without, it is one the
    server's handlers send (``ctx.notify``). Either way its params are checked.
    """

    name: str = attrs.field(converter=_notification_name)
    params_schema: JSONObject = attrs.field(factory=lambda: dict(_ANY_OBJECT))
    #: ``async handler(params, ctx)`` for a notification the client sends, or None
    handler: NotificationHandler | None = None
    description: str = ""
    _params: SchemaValidator = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.handler is not None and not callable(self.handler):
            raise ExtensionError(f"the handler of {describe(self.name)} is not callable")
        params = _schema(self.params_schema, f"params schema of {self.name}")
        object.__setattr__(self, "_params", params)

    def violations(self, params: JSONObject) -> list[JSONObject]:
        """What in ``params`` (``_meta`` aside) breaks the params schema."""
        return self._params.errors(_without_meta(params))


def _settings(value: object) -> JSONObject:
    if type(value) is not dict:
        raise ExtensionError(f"extension settings must be a JSON object, got {describe(value)}")
    try:
        orjson.dumps(value)
    except TypeError as exc:
        raise ExtensionError(f"extension settings must be JSON: {exc}") from None
    return value


def _requirements(value: Iterable[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        value = (value,)
    names = tuple(value)
    for name in names:
        if type(name) is not str or not (
            ("/" in name and _IDENTIFIER.fullmatch(name)) or _CAPABILITY_PATH.fullmatch(name)
        ):
            raise ExtensionError(
                f"invalid requirement {describe(name)}: a core capability ('tools', "
                "'resources.subscribe', …) or an extension identifier ('com.example/x')"
            )
    return names


def _methods(value: Iterable[CustomMethod]) -> tuple[CustomMethod, ...]:
    return tuple(value)


def _notifications(value: Iterable[CustomNotification]) -> tuple[CustomNotification, ...]:
    return tuple(value)


def _middleware(value: Iterable[Middleware]) -> tuple[Middleware, ...]:
    # Not ``converter=tuple``: attrs reads a builtin's signature from its text, which
    # imports tokenize's patterns at start-up (some 4 ms) for this one field.
    return tuple(value)


@attrs.frozen
class Extension:
    """A protocol extension (SEP-2133) as a server enables it: see ``server.extensions``."""

    #: ``{vendor-prefix}/{name}``, e.g. ``com.example/search``
    identifier: str = attrs.field(converter=check_identifier)
    #: its entry under ``capabilities.extensions`` (``{}``: supported, no settings)
    settings: JSONObject = attrs.field(factory=dict, converter=_settings)
    #: what it needs of the final configuration: core capabilities (``"tools"``,
    #: ``"resources.subscribe"``) and other extensions' identifiers
    requires: tuple[str, ...] = attrs.field(default=(), converter=_requirements)
    #: the request methods it adds
    methods: tuple[CustomMethod, ...] = attrs.field(default=(), converter=_methods)
    #: the notification methods it adds (received, sent, or both)
    notifications: tuple[CustomNotification, ...] = attrs.field(
        default=(), converter=_notifications
    )
    #: ``setup(server)``, run with the ``Server`` enabling it: registers its tools,
    #: resources and prompts
    setup: Callable[[Any], object] | None = None
    #: one line saying what it is
    description: str = ""
    #: the middleware it brings, outermost first, added after what was enabled before it
    middleware: tuple[Middleware, ...] = attrs.field(default=(), converter=_middleware)

    def __attrs_post_init__(self) -> None:
        if any(type(m) is not CustomMethod for m in self.methods):
            raise ExtensionError(f"{self.identifier}: methods must be CustomMethod values")
        if any(type(n) is not CustomNotification for n in self.notifications):
            raise ExtensionError(
                f"{self.identifier}: notifications must be CustomNotification values"
            )
        names = self.method_names()
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ExtensionError(f"{self.identifier} names a method twice: {', '.join(twice)}")
        if self.setup is not None and not callable(self.setup):
            raise ExtensionError(f"{self.identifier}: setup must be callable")
        if not all(callable(layer) for layer in self.middleware):
            raise ExtensionError(f"{self.identifier}: each middleware must be callable")

    def method_names(self) -> tuple[str, ...]:
        """Every method it adds, requests then notifications."""
        return (*(m.name for m in self.methods), *(n.name for n in self.notifications))


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
        if isinstance(item, Extension):
            return self._enabled.get(item.identifier) == item
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
                    errors = notification.violations(params)
                    if errors:
                        raise SchemaError(
                            f"notification {describe(method)} does not match its params "
                            f"schema: {_violations(errors)}"
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
        errors = notification.violations(params)
        if errors:
            _log.warning(
                "dropped notification %s: its params break its schema: %s",
                describe(method),
                _violations(errors),
            )
            return True
        if server is not self._server:
            ctx = _context_for(ctx, server)
        handler = notification.handler
        assert handler is not None
        try:
            await handler(_without_meta(params), ctx)
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
