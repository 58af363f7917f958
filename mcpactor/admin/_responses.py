# What every part of the admin app answers with, and the bounds on what it echoes.

from __future__ import annotations

import collections
import logging
import time
from typing import Any, Final

import orjson
from quart import Response, current_app, g, request

__all__ = [
    "MAX_AUDIT",
    "MAX_PARAM",
    "audit",
    "audit_trail",
    "html_response",
    "json_response",
    "remember",
    "remote",
]

#: the longest text from a request (a parameter, a field) the app reads or repeats
MAX_PARAM: Final = 200

#: what operators did: each action and sign-in, with what it acted on, the credential
#: and the remote address (shown at INFO whatever the level of the rest)
audit = logging.getLogger("mcpactor.admin.audit")
#: the entries of an app's audit trail it keeps (the oldest go first)
MAX_AUDIT: Final = 500


def audit_trail() -> collections.deque[dict[str, Any]]:
    """The current app's audit trail: what operators did, the latest last."""
    trail: collections.deque[dict[str, Any]] | None = current_app.config.get("ADMIN_AUDIT")
    if trail is None:
        trail = current_app.config["ADMIN_AUDIT"] = collections.deque(maxlen=MAX_AUDIT)
    return trail


def remember(action: str, target: dict[str, Any], result: str) -> None:
    """Keep an operator's ``action`` on ``target`` in the audit trail, with who and where.

    ``target``'s values were bounded by the caller (strings of at most ``MAX_PARAM``
    characters, or integers).
    """
    audit_trail().append(
        {
            "at": round(time.time(), 3),
            "action": action,
            "target": target,
            "who": getattr(g, "admin_credential", None),
            "from": remote(),
            "result": result,
        }
    )


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
