"""The optional extras: what each installs, and what the command line needs of them.

A base install serves over stdio; everything else is an extra (``pyproject.toml``). The
command checks, before it loads or starts anything, that every extra its options need is
installed, and says which to install when one is not: a line naming the option, the
extra and the missing module, never a traceback from deep inside the first import.
``find_spec`` only looks for the module: nothing is imported here.

This module is imported by every command that can need an extra: it imports nothing heavy.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Mapping
from typing import Any, Final

from .._exceptions import MCPActorError

__all__ = [
    "EXTRAS",
    "INCLUDED",
    "OTEL_API",
    "PURPOSES",
    "ExtraMissing",
    "extra_of",
    "modules_of",
    "require",
    "require_serve_extras",
]

#: the top-level modules each extra's own distributions install (``pyproject.toml``)
EXTRAS: Final[Mapping[str, tuple[str, ...]]] = {
    "http": ("httptools", "wsproto", "hypercorn", "trio_websocket", "h11"),
    "dev-loop": ("watchfiles",),
    "auth": ("joserfc", "httpx"),
    "admin": ("quart_trio", "prometheus_client"),
    "otel": ("opentelemetry",),
    "redis": ("coredis",),
    "openapi": ("yaml",),
}
#: the extras each extra installs as well: what it is for only works over HTTP
INCLUDED: Final[Mapping[str, tuple[str, ...]]] = {
    "dev-loop": ("http",),
    "auth": ("http",),
    "admin": ("http",),
    "redis": ("http",),
    "openapi": ("http",),
}
#: the OpenTelemetry API's own module: other opentelemetry distributions share the
#: namespace package, so the top-level name alone does not say the API is there
OTEL_API: Final = ("opentelemetry.trace",)
#: what each extra is for, in the words of a message that it is missing
PURPOSES: Final[Mapping[str, str]] = {
    "http": "serving over HTTP or connecting to a URL",
    "dev-loop": "mcpactor dev",
    "auth": "authorization (--auth-*)",
    "admin": "the admin listener (--admin)",
    "otel": "tracing (--otel)",
    "redis": "a shared store (--store)",
    "openapi": "serving an OpenAPI document (openapi:DOCUMENT)",
}


class ExtraMissing(MCPActorError):
    """What is asked for needs an extra that is not installed."""

    def __init__(self, what: str, extra: str, module: str) -> None:
        super().__init__(
            f"{what} needs the {extra} extra, which is not installed (no module named "
            f"{module!r}): pip install 'mcpactor[{extra}]'"
        )
        self.what = what
        self.extra = extra
        self.module = module


def _missing(names: tuple[str, ...]) -> str | None:
    import importlib.util

    for name in names:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return name
    return None


def require(extra: str, what: str | None = None, *, modules: tuple[str, ...] = ()) -> None:
    """Raise ExtraMissing naming ``extra`` unless its modules (or ``modules``) are there."""
    missing = _missing(modules or modules_of(extra))
    if missing is not None:
        raise ExtraMissing(what or PURPOSES[extra], extra, missing)


def modules_of(extra: str) -> tuple[str, ...]:
    """Every top-level module that ``pip install 'mcpactor[EXTRA]'`` installs."""
    included = [name for other in INCLUDED.get(extra, ()) for name in EXTRAS[other]]
    return tuple(dict.fromkeys([*EXTRAS[extra], *included]))


def extra_of(module: str) -> str | None:
    """The extra whose own distributions install the top-level module of ``module``."""
    top = module.partition(".")[0]
    return next((extra for extra, names in EXTRAS.items() if top in names), None)


def require_serve_extras(
    args: argparse.Namespace, config: Any = None, *, http: bool | None = None
) -> None:
    """Raise ExtraMissing for the first extra the ``serve`` options need and lack.

    The options and the config file's keys both count. ``http`` says whether the server
    will serve HTTP (``dev`` does by default); else ``--http`` or the file say so.
    """
    if http is None:
        http = getattr(args, "http", None) is not None or (
            config is not None and config.transport == "http"
        )
    for extra, what, modules in _needed(args, config, http=http):
        require(extra, what, modules=modules)


def _needed(
    args: argparse.Namespace, config: Any, *, http: bool
) -> Iterator[tuple[str, str, tuple[str, ...]]]:
    # In the order a user fixes them: the transport first, then what rides on it.
    if http:
        server = getattr(args, "http_server", None) or (
            config.http.server if config is not None else "builtin"
        )
        # The built-in server and the hypercorn one each need their own part of the extra.
        parser = "hypercorn" if server == "hypercorn" else "httptools"
        yield "http", "serving over HTTP (--http)", (parser, "wsproto")
    targets = getattr(args, "targets", ())
    documents: list[str] = []
    if any(t.startswith("openapi:") for t in targets):
        # Only such a target can be one (the OpenAPI settings are not read otherwise).
        from ..config import is_openapi_target

        documents = [t for t in targets if is_openapi_target(t)]
    urls = [t for t in targets if "://" in t and t not in documents]
    if config is not None:
        urls += [s.url for s in config.servers if s.url is not None]
        documents += [s.openapi.document for s in config.servers if s.openapi is not None]
    if urls:
        yield "http", f"proxying {urls[0][:200]!r}", ("h11", "trio_websocket")
    if documents:
        yield "openapi", f"serving {documents[0][:200]!r}", ("h11", *EXTRAS["openapi"])
    if http and (
        getattr(args, "store", None) is not None
        or (config is not None and config.store is not None and config.store.url is not None)
    ):
        yield "redis", "--store (a Redis store shared by replicas)", ("coredis",)
    if http and _built_in_verifier(args, config):
        yield "auth", "authorization (--auth-* or [auth])", ("joserfc", "httpx")
    admin = getattr(args, "admin", None) or (
        config.admin.listen if config is not None and config.admin is not None else None
    )
    if admin is not None:
        # the page's app and the /metrics route serve adds to it, on the http extra's
        # contained hypercorn worker (which imports the built-in server's parser)
        yield "admin", "--admin (the admin listener)", (*EXTRAS["admin"], "hypercorn", "httptools")
    if getattr(args, "otel", None) or (config is not None and config.otel):
        yield "otel", "--otel (OpenTelemetry spans)", OTEL_API


def _built_in_verifier(args: argparse.Namespace, config: Any) -> bool:
    # --auth-verifier brings its own verifier: only the built-in ones need the extra.
    from ._auth import _given

    given, _ = _given(args, config)
    return bool(given) and "verifier" not in given
