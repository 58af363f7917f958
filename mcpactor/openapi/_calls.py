# One operation called: the arguments placed in the path, query, headers, cookies and
# body as the document's styles say, the request made on the server's connection pool,
# the answer read no further than its bound, and what the API said turned into a tool
# result. The request runs in the caller's task: cancelling the MCP request cancels it,
# and the connection it was on is closed, not reused.

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs
import orjson
import trio

from .._exceptions import TransportBroken
from ..protocol import CallToolResult, TextContent
from ._operations import Operation, Parameter

__all__ = ["Caller", "HttpAnswer"]

#: how much of an error's body goes into the tool result
ERROR_BODY_CHARS: Final = 2000
_UNRESERVED: Final = "-._~"
_RESERVED: Final = ":/?#[]@!$&'()*+,;="


@attrs.frozen
class HttpAnswer:
    """What the API answered: its status, media type and body (whole, within bounds)."""

    status: int
    content_type: str
    body: bytes


class CallFailed(Exception):
    """The request could not be made or its answer not read; the message says why."""


@attrs.define
class Caller:
    """What every call of one server shares: the pool, base URL, headers and bounds."""

    pool: Any  # mcpactor.client.HttpPool
    base_url: str
    headers: Mapping[str, str]
    timeout: float | None
    max_response_bytes: int
    #: headers computed per call from the caller's principal (None: none)
    principal_headers: Callable[[Any], Mapping[str, str]] | None = None

    async def call(
        self, operation: Operation, arguments: Mapping[str, Any], principal: Any
    ) -> HttpAnswer:
        """Make the request ``arguments`` describe and read its answer."""
        from ..client import Url

        target, headers, body = request_parts(operation, arguments)
        url_text = self.base_url.rstrip("/") + target
        try:
            url = Url.parse(url_text)
        except ValueError as exc:
            raise CallFailed(f"cannot call {url_text!r}: {exc}") from exc
        # An argument's header wins over the principal's, which wins over the configured.
        chosen = {"accept": ("accept", "application/json, */*;q=0.5")}
        extra = self.principal_headers(principal) if self.principal_headers else {}
        for name, value in [*self.headers.items(), *extra.items(), *headers]:
            if any(c in value for c in "\r\n\0"):
                raise CallFailed(f"the value of header {name!r} holds a line break")
            chosen[name.lower()] = (name, value)
        sent = list(chosen.values())
        what = f"{operation.method.upper()} {url_text}"
        with trio.move_on_after(
            self.timeout if self.timeout is not None else float("inf")
        ) as scope:
            try:
                return await self._exchange(operation.method.upper(), url, sent, body, what)
            except TransportBroken as exc:
                raise CallFailed(f"{what} failed: {exc}") from exc
        assert scope.cancelled_caught
        raise CallFailed(f"{what} timed out after {self.timeout:g} s")

    async def _exchange(
        self, method: str, url: Any, headers: list[tuple[str, str]], body: bytes, what: str
    ) -> HttpAnswer:
        async with self.pool.request(method, url, headers, body) as response:
            limit = self.max_response_bytes
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > limit:
                raise CallFailed(
                    f"{what} answered HTTP {response.status} with {declared} bytes, "
                    f"more than the {limit} this server reads"
                )
            parts: list[bytes] = []
            size = 0
            while chunk := await response.receive_some():
                size += len(chunk)
                if size > limit:
                    raise CallFailed(
                        f"{what} answered HTTP {response.status} with more than the "
                        f"{limit} bytes this server reads"
                    )
                parts.append(chunk)
            return HttpAnswer(response.status, response.content_type, b"".join(parts))


def request_parts(
    operation: Operation, arguments: Mapping[str, Any]
) -> tuple[str, list[tuple[str, str]], bytes]:
    """The path and query, the headers and the body for ``arguments``."""
    path = operation.path
    query: list[str] = []
    headers: list[tuple[str, str]] = []
    cookies: list[str] = []
    for parameter in operation.parameters:
        if parameter.argument not in arguments:
            continue
        value = arguments[parameter.argument]
        if value is None:
            continue
        if parameter.location == "path":
            path = path.replace("{" + parameter.name + "}", _path_value(parameter, value))
        elif parameter.location == "query":
            query.extend(_query_pairs(parameter, value))
        elif parameter.location == "header":
            headers.append((parameter.name, _joined(value, explode=parameter.explode)))
        else:
            cookies.append(f"{parameter.name}={_quote(_joined(value, explode=False), '')}")
    if cookies:
        headers.append(("cookie", "; ".join(cookies)))
    body = b""
    if operation.body is not None and operation.body.argument in arguments:
        value = arguments[operation.body.argument]
        media_type = operation.body.media_type
        if media_type.startswith("application/x-www-form-urlencoded") and isinstance(value, dict):
            body = urllib.parse.urlencode(
                [(k, _scalar(v)) for k, v in value.items() if v is not None]
            ).encode()
        elif "json" in media_type or not isinstance(value, str):
            body = orjson.dumps(value)
            media_type = media_type if "json" in media_type else "application/json"
        else:
            body = value.encode()
        headers.append(("content-type", media_type))
    target = path + ("?" + "&".join(query) if query else "")
    return target, headers, body


def _scalar(value: Any) -> str:
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return orjson.dumps(value).decode()
    return str(value)


def _quote(text: str, safe: str) -> str:
    return urllib.parse.quote(text, safe=safe + _UNRESERVED)


def _joined(value: Any, *, explode: bool) -> str:
    # The simple style: a list's items, an object's keys and values, joined by commas.
    if isinstance(value, list):
        return ",".join(_scalar(v) for v in value)
    if isinstance(value, dict):
        sep = "=" if explode else ","
        return ",".join(f"{k}{sep}{_scalar(v)}" for k, v in value.items())
    return _scalar(value)


def _path_value(parameter: Parameter, value: Any) -> str:
    safe = _RESERVED if parameter.allow_reserved else ""
    if isinstance(value, (list, dict)):
        joined = _joined(value, explode=parameter.explode)
        # The separators are the style's, every value's own characters encoded.
        return ",".join(_quote(part, safe + "=") for part in joined.split(","))
    text = _quote(_scalar(value), safe)
    if parameter.style == "label":
        return "." + text
    if parameter.style == "matrix":
        return f";{parameter.name}={text}"
    return text


def _query_pairs(parameter: Parameter, value: Any) -> list[str]:
    safe = (
        _RESERVED.replace("&", "").replace("=", "").replace("#", "")
        if parameter.allow_reserved
        else ""
    )
    name = _quote(parameter.name, "")
    if isinstance(value, dict):
        if parameter.style == "deepObject":
            return [
                f"{name}%5B{_quote(str(k), '')}%5D={_quote(_scalar(v), safe)}"
                for k, v in value.items()
            ]
        if parameter.explode:
            return [f"{_quote(str(k), '')}={_quote(_scalar(v), safe)}" for k, v in value.items()]
        flat = [part for k, v in value.items() for part in (str(k), _scalar(v))]
        return [f"{name}={','.join(_quote(p, safe) for p in flat)}"]
    if isinstance(value, list):
        if parameter.explode and parameter.style == "form":
            return [f"{name}={_quote(_scalar(v), safe)}" for v in value]
        sep = {"spaceDelimited": "%20", "pipeDelimited": "|"}.get(parameter.style, ",")
        return [f"{name}={sep.join(_quote(_scalar(v), safe) for v in value)}"]
    return [f"{name}={_quote(_scalar(value), safe)}"]


def tool_answer(operation: Operation, answer: HttpAnswer, what: str) -> Any:
    """The tool's return value for what the API answered (an error result unless 2xx)."""
    text = answer.body.decode("utf-8", errors="replace")
    if not 200 <= answer.status < 300:
        shown = text[:ERROR_BODY_CHARS] + ("…" if len(text) > ERROR_BODY_CHARS else "")
        return error(f"{what} answered HTTP {answer.status}" + (f": {shown}" if shown else ""))
    parsed: Any = None
    if answer.content_type == "application/json" or answer.content_type.endswith("+json"):
        try:
            parsed = orjson.loads(answer.body) if answer.body else None
        except orjson.JSONDecodeError:
            parsed = None
    if operation.output_schema is not None:
        if isinstance(parsed, dict):
            # Checked against the output schema by the server, as any tool's output.
            return parsed
        return error(
            f"{what} answered HTTP {answer.status} without the JSON object the document "
            f"describes: {text[:ERROR_BODY_CHARS]}"
        )
    if not text:
        return CallToolResult(content=[TextContent(text=f"HTTP {answer.status}")])
    return CallToolResult(content=[TextContent(text=text)])


def error(text: str) -> CallToolResult:
    """An ``isError`` tool result that says ``text``."""
    return CallToolResult(content=[TextContent(text=text)], is_error=True)
