# Who may use the admin app: the credential check every route but the login form is
# behind, and the login form that sets the sign-in cookie (see ``_app.py``'s comment).

from __future__ import annotations

import hashlib
import hmac
import logging
import urllib.parse
from typing import TYPE_CHECKING, Final

from quart import Response, g, redirect, request
from quart_trio import QuartTrio

from ._responses import MAX_PARAM, audit, html_response, json_response, remember, remote

if TYPE_CHECKING:
    from ..auth import ResourceServer

__all__ = ["ADMIN_COOKIE", "Credentials"]

_log = logging.getLogger("mcpactor.admin")

#: the cookie the login form sets
ADMIN_COOKIE: Final = "mcpactor-admin"

_LOGIN_PAGE: Final = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>mcpactor admin — sign in</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="static/style.css"></head>
<body class="login"><form method="post" action="login">
<h1>mcpactor admin</h1>
<p>The admin token was printed when the server started (or is in its token file).</p>
<label>Token <input name="token" type="password" autocomplete="current-password" autofocus
required></label>
<button type="submit">Sign in</button>{error}
</form></body></html>
"""


def _mac(token: str, purpose: bytes) -> str:
    return hmac.new(token.encode(), purpose, hashlib.sha256).hexdigest()


def _same_origin(origin: str, host: str) -> bool:
    parts = urllib.parse.urlsplit(origin[:MAX_PARAM])
    return parts.netloc.lower() == host.lower()


def _bearer(value: str | None) -> str:
    # The resource server's own parsing: the same bounds and errors as the MCP endpoint's.
    from ..auth import bearer_token

    return bearer_token(value)


class Credentials:
    """The admin token (a bearer token, or the cookie its sign-in sets) and, with
    ``resource_server``, access tokens that grant ``scope``."""

    def __init__(self, token: str, resource_server: ResourceServer | None, scope: str) -> None:
        self._token = token
        self._resource_server = resource_server
        self._scope = scope
        #: the sign-in cookie's value: an HMAC of the token, never the token itself
        self.cookie = _mac(token, b"mcpactor admin cookie")
        #: the page's CSRF value, which actions authorised by the cookie must bring
        self.csrf = _mac(token, b"mcpactor admin csrf")

    def install(self, app: QuartTrio) -> None:
        """Put every route of ``app`` but the login form behind the check; add the form."""
        app.before_request(self.check)
        app.get("/login")(self.login_form)
        app.post("/login")(self.login)

    async def check(self) -> Response | None:
        """None if the request may go on, else the refusal (or the way to the form)."""
        if request.path in ("/login", "/static/style.css", "/favicon.ico"):
            return None
        how = self._by_token_or_cookie()
        if how is None:
            if self._resource_server is not None and "Authorization" in request.headers:
                # A bearer credential is not ambient (no other site can make a browser
                # send it), so it needs no CSRF value.
                return await self._by_access_token()
            if request.method == "GET" and request.path == "/":
                return redirect("login")  # type: ignore[return-value]
            return self._refused()
        g.admin_credential = "admin token" if how == "bearer" else "admin sign-in cookie"
        if request.method == "POST" and how == "cookie":
            sent = request.headers.get("X-Admin-CSRF", "")
            if not hmac.compare_digest(sent.encode(), self.csrf.encode()):
                return json_response({"error": "the page's CSRF value is missing or wrong"}, 403)
            origin = request.headers.get("Origin")
            if origin is not None and not _same_origin(origin, request.host):
                return json_response({"error": "cross-origin action refused"}, 403)
        return None

    async def login_form(self) -> Response:
        """The form the admin token is typed into."""
        return html_response(_LOGIN_PAGE.format(error=""))

    async def login(self) -> Response:
        """Check the typed token; set the sign-in cookie and go to the page if it is right."""
        form = await request.form
        given = form.get("token", "")[: MAX_PARAM * 4]
        if not hmac.compare_digest(given.strip().encode(), self._token.encode()):
            audit.warning("admin sign-in refused (wrong token) from %s", remote())
            remember("sign-in", {}, "refused: wrong token")
            return html_response(
                _LOGIN_PAGE.format(error='<p class="error">That is not the admin token.</p>'),
                403,
            )
        audit.info("admin sign-in with the admin token from %s", remote())
        remember("sign-in", {}, "signed in with the admin token")
        response: Response = redirect("./")  # type: ignore[assignment]
        response.set_cookie(
            ADMIN_COOKIE,
            self.cookie,
            httponly=True,
            samesite="Strict",
            secure=request.scheme == "https",
            path="/",
        )
        return response

    def _by_token_or_cookie(self) -> str | None:
        # How the request is authorised by the admin token: "bearer", "cookie", or None.
        header = request.headers.get("Authorization", "")
        scheme, _, given = header.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(
            given.strip().encode(), self._token.encode()
        ):
            return "bearer"
        cookie = request.cookies.get(ADMIN_COOKIE, "")
        if cookie and hmac.compare_digest(cookie.encode(), self.cookie.encode()):
            return "cookie"
        return None

    async def _by_access_token(self) -> Response | None:
        # The server's authorization vouches for the bearer token: None if it grants the
        # admin scope, else the refusal (401 for no or a bad token, 403 for the scope).
        from ..auth import AuthError, MissingToken

        assert self._resource_server is not None
        scope = self._scope
        try:
            principal = await self._resource_server.verify(
                _bearer(request.headers.get("Authorization"))
            )
        except MissingToken:
            return self._refused()
        except AuthError as exc:
            # The error says why (expired, wrong audience…), never the token itself.
            return json_response(
                {"error": f"the access token was refused: {exc}"[: MAX_PARAM * 2]},
                exc.status,
                {"WWW-Authenticate": 'Bearer realm="mcpactor admin", error="invalid_token"'}
                if exc.status == 401
                else None,
            )
        if not principal.has_scopes(scope):
            _log.warning(
                "admin access refused to %r: no %s scope", principal.subject[:MAX_PARAM], scope
            )
            challenge = (
                f'Bearer realm="mcpactor admin", error="insufficient_scope", scope="{scope}"'
            )
            return json_response(
                {"error": f"the access token lacks the admin scope {scope!r}"},
                403,
                {"WWW-Authenticate": challenge},
            )
        g.admin_credential = f"access token of {principal.subject[:MAX_PARAM]!r}"
        return None

    def _refused(self) -> Response:
        needed = "the admin token"
        if self._resource_server is not None:
            needed += f" or an access token with the {self._scope!r} scope"
        return json_response(
            {"error": f"{needed} is required (Authorization: Bearer …)"},
            401,
            {"WWW-Authenticate": 'Bearer realm="mcpactor admin"'},
        )
