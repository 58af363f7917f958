# What every part of the admin app answers with, and the bounds on what it echoes.

from __future__ import annotations

import logging
from typing import Any, Final

import orjson
from quart import Response, request

__all__ = ["MAX_PARAM", "audit", "html_response", "json_response", "remote"]

#: the longest text from a request (a parameter, a field) the app reads or repeats
MAX_PARAM: Final = 200

#: what operators did: each action and sign-in, with what it acted on, the credential
#: and the remote address (shown at INFO whatever the level of the rest)
audit = logging.getLogger("mcpactor.admin.audit")


def json_response(
    value: Any, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    """``value`` as a JSON response."""
    return Response(
        orjson.dumps(value),
        status=status,
        content_type="application/json",
        headers=headers,
    )


def html_response(text: str, status: int = 200) -> Response:
    """``text`` as an HTML response."""
    return Response(text, status=status, content_type="text/html; charset=utf-8")


def remote() -> str:
    """The peer of the admin request (bounded: a server's ASGI scope could say anything)."""
    return str(request.remote_addr or "-")[:MAX_PARAM]
