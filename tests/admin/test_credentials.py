"""The admin credentials over real sockets: the admin token, or an access token of the
server's own authorization that grants the admin scope; nothing works without one."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from mcpactor.client import connect_http

from .harness import TOKEN, Served, open_served
from .tokens import ISSUER, Issuer

#: every route and action, as (method, path, JSON body)
ROUTES: list[tuple[str, str, dict[str, Any] | None]] = [
    ("GET", "", None),
    ("GET", "static/app.js", None),
    ("GET", "api/tree", None),
    ("GET", "api/stream", None),
    ("GET", "metrics", None),
    *(
        ("POST", f"api/actions/{action}", {"session": "s", "request": 1, "task": "t", "key": 1})
        for action in ("cancel-request", "cancel-stateless", "cancel-task", "close-session")
    ),
]


@pytest.fixture
def issuer(tmp_path: Path) -> Issuer:
    return Issuer(tmp_path)


async def _status(
    admin: httpx.AsyncClient, method: str, path: str, body: Any, **headers: str
) -> int:
    # A stream is only opened: its status is all that is wanted here.
    async with admin.stream(method, path, json=body, headers=headers) as response:
        return response.status_code


async def _first_event(served: Served, credential: str) -> bytes:
    # Over a plain socket: the head, then the stream's first event, then hang up.
    url = httpx.URL(served.admin_url)
    assert url.host
    assert url.port is not None
    stream = await trio.open_tcp_stream(url.host, url.port)
    async with stream:
        await stream.send_all(
            b"GET /api/stream HTTP/1.1\r\nHost: admin\r\n"
            + f"Authorization: Bearer {credential}\r\n\r\n".encode()
        )
        received = b""
        with trio.fail_after(10):
            # (The body is chunked: the event's blank line is inside a chunk.)
            while b"\n\n" not in received.partition(b"event: tree")[2]:
                chunk = await stream.receive_some(65536)
                assert chunk, received[:500]
                received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    assert b"text/event-stream" in head
    return body


def _admin(served: Served) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=served.admin_url, timeout=10, follow_redirects=False)


async def test_without_a_credential_every_route_and_action_is_refused(issuer: Issuer) -> None:
    async with (
        open_served(resource_server=issuer.resource_server()) as served,
        _admin(served) as admin,
    ):
        for method, path, body in ROUTES:
            status = await _status(admin, method, path, body)
            # The page sends a browser to its login form; everything else is 401.
            assert status == (302 if path == "" else 401), path


async def test_an_access_token_with_the_admin_scope_is_an_admin(issuer: Issuer) -> None:
    token = issuer.token("mcp mcpactor:admin")
    auth = {"Authorization": f"Bearer {token}"}
    async with (
        open_served(resource_server=issuer.resource_server()) as served,
        _admin(served) as admin,
        connect_http(served.mcp_url, initialize=True, protocol_version="2025-11-25") as client,
    ):
        for method, path, body in ROUTES:
            status = await _status(admin, method, path, body, **auth)
            # An action on nothing that exists is 409 (done: false), past the check.
            assert status == (409 if method == "POST" else 200), path
        event = await _first_event(served, token)
        assert b"event: tree\ndata: {" in event
        # An action done with it has its effect.
        task = await client.tasks.call_tool("job", {})
        response = await admin.post(
            "api/actions/cancel-task", json={"task": task["taskId"]}, headers=auth
        )
        assert response.json() == {"action": "cancel-task", "done": True}
        assert (await client.tasks.get(task["taskId"]))["status"] == "cancelled"
        # The admin token still works beside it.
        assert (
            await _status(admin, "GET", "api/tree", None, Authorization=f"Bearer {TOKEN}") == 200
        )


@pytest.mark.parametrize(
    ("scope", "claims", "status", "said"),
    [
        ("mcp", {}, 403, "lacks the admin scope 'mcpactor:admin'"),
        ("mcp mcpactor:admin", {"aud": "https://elsewhere.invalid/mcp"}, 401, "refused"),
        ("mcp mcpactor:admin", {"iss": "https://other.invalid"}, 401, "refused"),
        ("mcp mcpactor:admin", {"exp": 1_000_000, "iat": 999_000}, 401, "refused"),
    ],
)
async def test_an_access_token_that_is_not_an_admins_is_refused_everywhere(
    issuer: Issuer, scope: str, claims: dict[str, Any], status: int, said: str
) -> None:
    token = issuer.token(scope, **claims)
    auth = {"Authorization": f"Bearer {token}"}
    async with (
        open_served(resource_server=issuer.resource_server()) as served,
        _admin(served) as admin,
    ):
        for method, path, body in ROUTES:
            assert await _status(admin, method, path, body, **auth) == status, path
        answer = await admin.get("api/tree", headers=auth)
        assert said in answer.json()["error"]
        assert token not in answer.text
        if status == 403:
            assert 'scope="mcpactor:admin"' in answer.headers["WWW-Authenticate"]


async def test_a_forged_token_is_refused(issuer: Issuer, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    forged = Issuer(other).token("mcpactor:admin")
    async with (
        open_served(resource_server=issuer.resource_server()) as served,
        _admin(served) as admin,
    ):
        answer = await admin.get("api/tree", headers={"Authorization": f"Bearer {forged}"})
        assert answer.status_code == 401


async def test_the_admin_scope_is_configurable(issuer: Issuer) -> None:
    async with (
        open_served(resource_server=issuer.resource_server(), scope="ops:admin") as served,
        _admin(served) as admin,
    ):
        default = {"Authorization": f"Bearer {issuer.token('mcpactor:admin')}"}
        assert (await admin.get("api/tree", headers=default)).status_code == 403
        ops = {"Authorization": f"Bearer {issuer.token('ops:admin')}"}
        assert (await admin.get("api/tree", headers=ops)).status_code == 200


async def test_without_authorization_an_access_token_is_nothing(issuer: Issuer) -> None:
    # No ResourceServer: only the admin token is a credential, whatever a JWT says.
    async with open_served() as served, _admin(served) as admin:
        auth = {"Authorization": f"Bearer {issuer.token('mcpactor:admin')}"}
        for method, path, body in ROUTES[1:]:
            assert await _status(admin, method, path, body, **auth) == 401, path
        assert ISSUER not in (await admin.get("api/tree", headers=auth)).text


async def test_the_login_form_takes_only_the_admin_token(issuer: Issuer) -> None:
    async with (
        open_served(resource_server=issuer.resource_server()) as served,
        _admin(served) as admin,
    ):
        form = {"token": issuer.token("mcpactor:admin")}
        assert (await admin.post("login", data=form)).status_code == 403
        with trio.fail_after(10):
            assert (await admin.post("login", data={"token": TOKEN})).status_code == 302


async def test_every_action_and_sign_in_is_audited_with_who_and_from_where(
    issuer: Issuer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcpactor.admin.audit")
    access = {"Authorization": f"Bearer {issuer.token('mcpactor:admin')}"}
    async with (
        open_served(resource_server=issuer.resource_server()) as served,
        _admin(served) as admin,
        connect_http(served.mcp_url, initialize=True, protocol_version="2025-11-25"),
    ):
        (session,) = (await admin.get("api/tree", headers=access)).json()["sessions"]["items"]
        closed = await admin.post(
            "api/actions/close-session", json={"session": session["id"]}, headers=access
        )
        assert closed.json()["done"] is True
        assert (await admin.post("login", data={"token": "not-it"})).status_code == 403
        assert (await admin.post("login", data={"token": TOKEN})).status_code == 302
        page = (await admin.get("")).text
        csrf = page.split('name="csrf" content="', 1)[1].split('"', 1)[0]
        task = await admin.post(
            "api/actions/cancel-task",
            json={"task": "no-such-task"},
            headers={"X-Admin-CSRF": csrf},
        )
        assert task.status_code == 409
    audit = [
        (r.levelname, r.getMessage()) for r in caplog.records if r.name == "mcpactor.admin.audit"
    ]
    assert audit == [
        (
            "INFO",
            f"admin action close-session on session {session['id']!r} by access token of "
            "'operator' from 127.0.0.1: done",
        ),
        ("WARNING", "admin sign-in refused (wrong token) from 127.0.0.1"),
        ("INFO", "admin sign-in with the admin token from 127.0.0.1"),
        (
            "INFO",
            "admin action cancel-task on task 'no-such-task' by admin sign-in cookie from "
            "127.0.0.1: nothing to do",
        ),
    ]
