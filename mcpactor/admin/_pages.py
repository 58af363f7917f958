# The page itself: its HTML (with the CSRF value written in), its script and style, and
# the headers every response of the app carries.

from __future__ import annotations

import importlib.resources
from typing import Final

from quart import Response
from quart_trio import QuartTrio

from ._responses import json_response

__all__ = ["install_pages"]

_STATIC_TYPES: Final = {
    "app.js": "text/javascript; charset=utf-8",
    "console.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}

# The page's icon (the logo's diamond), answered without the credential so that no
# page, the login form included, logs a failed request for it.
_FAVICON: Final = (
    b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
    b'<path d="M8 1 15 8 8 15 1 8z" fill="#5fb3f9"/></svg>'
)


def _static(name: str) -> bytes:
    return importlib.resources.files("mcpactor.admin").joinpath("static", name).read_bytes()


async def no_store(response: Response) -> Response:
    """Keep every answer out of caches and frames, and its type from being sniffed."""
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Content-Security-Policy"] = (
        "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'"
    )
    return response


def install_pages(app: QuartTrio, csrf: str) -> None:
    """Serve the page (``/``, with ``csrf`` for its actions) and its static files."""
    app.after_request(no_store)

    @app.get("/")
    async def page() -> Response:
        html = _static("index.html").replace(b"{{csrf}}", csrf.encode())
        return Response(html, status=200, content_type="text/html; charset=utf-8")

    @app.get("/favicon.ico")
    async def favicon() -> Response:
        return Response(_FAVICON, status=200, content_type="image/svg+xml")

    @app.get("/static/<name>")
    async def static(name: str) -> Response:
        content_type = _STATIC_TYPES.get(name)
        if content_type is None:
            return json_response({"error": "no such file"}, 404)
        return Response(_static(name), status=200, content_type=content_type)
