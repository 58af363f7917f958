# from_openapi: a Server whose tools (and resources) are a document's operations.

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from .._version import __version__
from ..server import Context, Server
from ._calls import Caller, CallFailed, error, tool_answer
from ._document import Document, OpenAPIError, load_document
from ._operations import Operation, Route, operations, route_of

__all__ = ["from_openapi"]

_log = logging.getLogger("mcpactor.openapi")
#: the name of the Context parameter of every operation's handler (no argument's name)
_CONTEXT = "_openapi_context"


def from_openapi(
    document: str | Path | Mapping[str, Any],
    *,
    name: str | None = None,
    base_url: str | None = None,
    headers: Mapping[str, str] | None = None,
    route_map: Sequence[Route] = (),
    names: Mapping[str, str] | None = None,
    timeout: float | None = 30.0,
    max_response_bytes: int = 4 * 1024 * 1024,
    principal_headers: Callable[[Any], Mapping[str, str]] | None = None,
) -> Server:
    """A Server with one tool per operation of an OpenAPI 3.0/3.1 document.

    ``document`` is a path, an http(s) URL (fetched now) or the parsed document.
    ``base_url`` overrides the document's first ``servers`` URL; ``headers`` go with
    every request (API keys); ``principal_headers(principal)`` adds headers computed
    from the caller's Principal per call (opt-in; None without authorization).
    ``route_map`` decides, first match wins, which operations become tools (the
    default), resources or nothing; ``names`` maps an operationId (or ``"GET /path"``)
    to a tool name. ``timeout`` bounds each HTTP request (seconds) and
    ``max_response_bytes`` the answer read.

    Raises:
        OpenAPIError: the document cannot be read, is not OpenAPI 3.0/3.1, has a
            reference that cannot be followed, or has no base URL to call.
    """
    origin = str(document) if not isinstance(document, Mapping) else "the document"
    doc = Document(load_document(document), origin)
    raw_info = doc.data.get("info")
    info: dict[str, Any] = raw_info if isinstance(raw_info, dict) else {}
    title = _text(info, "title")
    version = _text(info, "version") or __version__
    description = _text(info, "description")
    url = base_url or _document_url(doc, origin)
    if url is None:
        raise OpenAPIError(
            f"{origin}: no absolute URL in 'servers' to call: give base_url= "
            "(in mcpactor.toml: base_url; with mcpactor serve: --openapi-base-url)"
        )
    from ..client import HttpPool

    caller = Caller(
        pool=HttpPool(),
        base_url=url,
        headers=dict(headers or {}),
        timeout=timeout,
        max_response_bytes=max_response_bytes,
        principal_headers=principal_headers,
    )
    server: Server = Server(
        name or _server_name(title), version, title=title, description=_short(description)
    )
    for operation in operations(doc, names or {}):
        kind = route_of(operation, route_map)
        if kind == "exclude":
            continue
        if kind == "resource" and _add_resource(server, caller, operation):
            continue
        server.add_tool(
            _tool_handler(caller, operation),
            name=operation.name,
            description=operation.description,
            input_schema=operation.input_schema,
            output_schema=operation.output_schema,
            structured_output=operation.output_schema is not None,
        )

    @server.lifespan
    @asynccontextmanager
    async def _pool(_: Server) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await caller.pool.aclose()

    return server


def _tool_handler(caller: Caller, operation: Operation) -> Callable[..., Any]:
    what = f"{operation.method.upper()} {operation.path}"

    async def call(_openapi_context: Context, **arguments: Any) -> Any:
        try:
            answer = await caller.call(operation, arguments, _openapi_context.principal)
        except CallFailed as exc:
            return error(str(exc))
        return tool_answer(operation, answer, what)

    # Only the context is a parameter: the arguments, checked against the operation's
    # schema, arrive as keywords whatever their names.
    call.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(_CONTEXT, inspect.Parameter.KEYWORD_ONLY, annotation=Context)]
    )
    call.__name__ = operation.name
    return call


def _add_resource(server: Server, caller: Caller, operation: Operation) -> bool:
    # A GET with path parameters only becomes a resource (a template with them).
    variables = [p.name for p in operation.parameters if p.location == "path"]
    fits = (
        operation.method == "get"
        and operation.body is None
        and all(p.location == "path" for p in operation.parameters)
        and all(v.isidentifier() and v != _CONTEXT for v in variables)
    )
    if not fits:
        _log.warning(
            "%s %s cannot be a resource (only a GET with path parameters only can): "
            "served as the tool %r",
            operation.method.upper(),
            operation.path,
            operation.name,
        )
        return False
    what = f"{operation.method.upper()} {operation.path}"

    async def read(_openapi_context: Context, **arguments: Any) -> str:
        try:
            answer = await caller.call(operation, arguments, _openapi_context.principal)
        except CallFailed as exc:
            raise OpenAPIError(str(exc)) from None
        if not 200 <= answer.status < 300:
            text = answer.body[:2000].decode("utf-8", errors="replace")
            raise OpenAPIError(f"{what} answered HTTP {answer.status}: {text}")
        return answer.body.decode("utf-8", errors="replace")

    params = [inspect.Parameter(_CONTEXT, inspect.Parameter.KEYWORD_ONLY, annotation=Context)]
    params += [
        inspect.Parameter(v, inspect.Parameter.KEYWORD_ONLY, annotation=str) for v in variables
    ]
    read.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    read.__name__ = operation.name
    server.add_resource(
        read,
        caller.base_url.rstrip("/") + operation.path,
        name=operation.name,
        description=operation.description,
        mime_type=_json_or_none(operation),
    )
    return True


def _json_or_none(operation: Operation) -> str | None:
    return "application/json" if operation.output_schema is not None else None


def _document_url(doc: Document, origin: str) -> str | None:
    servers = doc.data.get("servers")
    if not isinstance(servers, list):
        return None
    for entry in servers:
        url = entry.get("url") if isinstance(entry, dict) else None
        if not isinstance(url, str):
            continue
        variables = entry.get("variables") if isinstance(entry.get("variables"), dict) else {}
        for key, spec in variables.items():
            default = spec.get("default") if isinstance(spec, dict) else None
            url = url.replace("{" + key + "}", str(default))
        if url.startswith(("http://", "https://")):
            return url
        if origin.startswith(("http://", "https://")):
            # Relative to where the document came from, as the specification says.
            import urllib.parse

            return urllib.parse.urljoin(origin, url)
    return None


def _server_name(title: str | None) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.-]+", "_", title or "openapi").strip("_").lower() or "openapi"


def _text(table: dict[str, Any], key: str) -> str | None:
    value = table.get(key)
    return value if isinstance(value, str) else None


def _short(text: str | None) -> str | None:
    return text[:1000] if text else None
