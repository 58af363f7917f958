# What an operator can do from the page: cancel a request, a stateless request or a task,
# close a session, drain the server. Each goes through the Observatory's action (the
# paths the protocol uses), draining through the server's readiness (as SIGTERM does),
# and is written to the audit log with what it acted on and who asked.

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import orjson
from quart import Response, g, request
from quart_trio import QuartTrio

from ..runtime import Observatory
from ._responses import MAX_PARAM, audit, json_response, remember, remote

__all__ = ["ACTIONS", "install_actions"]

#: the actions, by the name in their path
ACTIONS: Final = ("cancel-request", "cancel-stateless", "cancel-task", "close-session", "drain")

#: begins draining the server (readiness false, then a graceful stop); False if it was
Drain = Callable[[], bool]

#: what each action acts on: the body's fields that name it
_TARGETS: Final = {
    "cancel-request": ("session", "request"),
    "cancel-stateless": ("key",),
    "cancel-task": ("task",),
    "close-session": ("session",),
    "drain": (),
}


class _BadAction(Exception):
    pass


def _field(given: dict[str, Any], name: str) -> str:
    value = given.get(name)
    if not isinstance(value, str) or not value or len(value) > MAX_PARAM:
        raise _BadAction(f"{name!r} must be a non-empty string of at most {MAX_PARAM} characters")
    return value


async def _act(
    observatory: Observatory, drain: Drain | None, action: str, given: dict[str, Any]
) -> bool:
    if action == "drain":
        if drain is None:
            raise _BadAction("this server has no HTTP listener to drain")
        return drain()
    if action == "cancel-request":
        request_id = given.get("request")
        if isinstance(request_id, bool) or not isinstance(request_id, int | str):
            raise _BadAction("'request' must be the request's id (a string or an integer)")
        if isinstance(request_id, str) and len(request_id) > MAX_PARAM:
            raise _BadAction("'request' is too long")
        return observatory.cancel_request(_field(given, "session"), request_id)
    if action == "cancel-stateless":
        key = given.get("key")
        if isinstance(key, bool) or not isinstance(key, int):
            raise _BadAction("'key' must be the stateless request's key (an integer)")
        return observatory.cancel_stateless(key)
    if action == "cancel-task":
        return await observatory.cancel_task(_field(given, "task"))
    if action == "close-session":
        return observatory.close_session(_field(given, "session"))
    raise _BadAction(f"no action named {action[:MAX_PARAM]!r}; the actions: {', '.join(ACTIONS)}")


def _target(action: str, given: dict[str, Any]) -> str:
    # The fields were checked by _act: strings of at most MAX_PARAM characters, or ints.
    named = " ".join(f"{name} {given.get(name)!r}" for name in _TARGETS.get(action, ()))
    return named or "the server"


def install_actions(app: QuartTrio, observatory: Observatory, drain: Drain | None = None) -> None:
    """Serve ``POST /api/actions/<action>`` (a JSON object naming what to act on).

    ``drain`` begins draining the served server (the ``drain`` action); None: it has none.
    """

    @app.post("/api/actions/<action>")
    async def act(action: str) -> Response:
        body = await request.get_data(cache=False)
        try:
            given = orjson.loads(body) if body else {}
        except orjson.JSONDecodeError:
            return json_response({"error": "the body must be a JSON object"}, 400)
        if type(given) is not dict:
            return json_response({"error": "the body must be a JSON object"}, 400)
        try:
            done = await _act(observatory, drain, action, given)
        except _BadAction as exc:
            return json_response({"error": str(exc)}, 400 if action in ACTIONS else 404)
        audit.info(
            "admin action %s on %s by %s from %s: %s",
            action,
            _target(action, given),
            getattr(g, "admin_credential", "?"),
            remote(),
            "done" if done else "nothing to do",
        )
        target = {name: given.get(name) for name in _TARGETS.get(action, ())}
        remember(action, target, "done" if done else "nothing to do")
        return json_response({"action": action, "done": done}, 200 if done else 409)
