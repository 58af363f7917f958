"""The admin app: the credential, the tree as JSON, and the action's input checks."""

from __future__ import annotations

import pytest
import trio

from mcpactor.admin import create_admin_app
from mcpactor.runtime import Observatory

TOKEN = "s3cret-admin-token"


def _app() -> tuple[Observatory, object]:
    observatory = Observatory(replica="test")
    observatory.install()
    return observatory, create_admin_app(observatory, token=TOKEN)


async def test_every_api_route_needs_the_token() -> None:
    _, app = _app()
    client = app.test_client()  # type: ignore[attr-defined]
    for path in ("/api/tree", "/api/stream"):
        response = await client.get(path)
        assert response.status_code == 401, path
        assert "Bearer" in response.headers["WWW-Authenticate"]
    response = await client.post("/api/actions/close-session", json={"session": "x"})
    assert response.status_code == 401
    response = await client.get("/api/tree", headers={"Authorization": "Bearer wrong"})
    assert response.status_code == 401
    # The page itself sends a browser to the login form.
    response = await client.get("/")
    assert response.status_code == 302
    assert response.headers["Location"].endswith("login")


async def test_the_tree_with_the_token() -> None:
    _, app = _app()
    client = app.test_client()  # type: ignore[attr-defined]
    response = await client.get("/api/tree", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200
    tree = await response.get_json()
    assert tree["replica"]["id"] == "test"
    assert tree["sessions"] == {"total": 0, "shown": 0, "hidden_requests": 0, "items": []}


async def test_the_login_form_sets_a_cookie_that_is_not_the_token() -> None:
    _, app = _app()
    client = app.test_client()  # type: ignore[attr-defined]
    refused = await client.post("/login", form={"token": "nope"})
    assert refused.status_code == 403
    response = await client.post("/login", form={"token": TOKEN})
    assert response.status_code == 302
    cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie
    assert "SameSite=Strict" in cookie
    assert TOKEN not in cookie
    page = await client.get("/")
    assert page.status_code == 200
    assert b'name="csrf"' in await page.get_data()
    # The cookie reads the tree, but an action needs the page's CSRF value too.
    assert (await client.get("/api/tree")).status_code == 200
    action = await client.post("/api/actions/close-session", json={"session": "x"})
    assert action.status_code == 403


@pytest.mark.parametrize(
    ("action", "body"),
    [
        ("cancel-request", {"session": "x"}),
        ("cancel-request", {"session": "x", "request": True}),
        ("cancel-request", {"session": "x" * 500, "request": 1}),
        ("cancel-task", {"task": 3}),
        ("cancel-stateless", {"key": "1"}),
        ("close-session", {}),
        # An app made without a server to drain.
        ("drain", {}),
    ],
)
async def test_bad_action_bodies_are_refused_with_a_reason(action: str, body: object) -> None:
    _, app = _app()
    client = app.test_client()  # type: ignore[attr-defined]
    response = await client.post(
        f"/api/actions/{action}", json=body, headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert response.status_code == 400
    assert (await response.get_json())["error"]


async def test_an_unknown_action_or_nothing_to_act_on() -> None:
    _, app = _app()
    client = app.test_client()  # type: ignore[attr-defined]
    headers = {"Authorization": f"Bearer {TOKEN}"}
    response = await client.post("/api/actions/reboot", json={}, headers=headers)
    assert response.status_code == 404
    response = await client.post(
        "/api/actions/close-session", json={"session": "gone"}, headers=headers
    )
    assert response.status_code == 409
    assert await response.get_json() == {"action": "close-session", "done": False}
    await trio.lowlevel.checkpoint()
