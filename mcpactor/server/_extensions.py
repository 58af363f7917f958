# Extensions (SEP-2133) as values a server enables: ``Extension``. The collection a server
# holds them in (``server.extensions``) is _extension_set.py, loaded by every server.
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

import logging
import re
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, Final

import attrs
import orjson

from .._exceptions import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    ExtensionError,
    RequestError,
)
from ..protocol import (
    CORE_METHODS,
    STATUS_NOTIFICATION,
    TASK_EXTENSION_METHODS,
    JSONObject,
    describe,
)
from ._registry import compile_validator
from ._validation import SchemaValidator

if TYPE_CHECKING:
    from ._context import Context
    from ._middleware import Middleware

__all__ = [
    "RESERVED_METHODS",
    "CustomMethod",
    "CustomNotification",
    "Extension",
    "check_identifier",
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


def without_meta(params: JSONObject) -> JSONObject:
    """``params`` without their ``_meta``."""
    return {k: v for k, v in params.items() if k != "_meta"} if "_meta" in params else params


def violations(errors: list[JSONObject]) -> str:
    """Schema violations as one line."""
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
        given = without_meta(params)
        errors = self._params.errors(given)
        if errors:
            raise RequestError(
                INVALID_PARAMS,
                f"invalid params for {describe(self.name)}: {violations(errors)}",
                {"method": self.name, "errors": errors},
            )
        result = await self.handler(given, ctx)
        if type(result) is not dict:
            broken = f"a {type(result).__name__}, not an object"
        else:
            errors = self._result.errors(without_meta(result))
            if not errors:
                return result
            broken = violations(errors)
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
        return self._params.errors(without_meta(params))


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
