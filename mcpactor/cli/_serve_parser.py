"""The parser of ``mcpactor serve``: what is served, how long it is given, and HTTP.

``mcpactor dev`` takes every option built here too. The HTTP options are grouped by
topic, in the order ``--help`` lists them; each other group (authorization, the admin
listener, the store, observability) comes from the module that reads it.
"""

from __future__ import annotations

import argparse
from typing import Any

from ._arguments import (
    add_composition_arguments,
    add_global_arguments,
    address_list,
    endpoint_path,
    positive_count,
    positive_seconds,
    seconds,
)

__all__ = ["add_serve_parser"]


def add_serve_parser(commands: Any) -> argparse.ArgumentParser:
    serve: argparse.ArgumentParser = commands.add_parser(
        "serve", help="serve one server, several as one, or every installed plugin"
    )
    add_global_arguments(serve, command=True)
    add_composition_arguments(serve)
    serve.add_argument(
        "--grace",
        type=seconds,
        default=5.0,
        help="seconds in-flight requests get to finish at shutdown (default: 5)",
    )
    serve.add_argument(
        "--max-message-bytes",
        type=positive_count,
        default=4 * 1024 * 1024,
        help="the longest message read or written, in bytes: a stdin line, an HTTP body, a "
        "WebSocket message, an answer (default: 4 MiB)",
    )
    serve.add_argument(
        "--state-key-file",
        metavar="PATH",
        help="the keys that seal the state of multi round-trip requests (stateless "
        "revisions), one base64 key per line, the first sealing; processes sharing it take "
        "each other's retries (default: $MCPACTOR_STATE_KEYS, else a key of this process)",
    )
    serve.add_argument(
        "--listen-keepalive",
        type=positive_seconds,
        default=None,
        metavar="SECONDS",
        help="seconds between keep-alive comments on idle listen streams over HTTP (default: 15)",
    )
    serve.add_argument(
        "--no-gc-tuning",
        action="store_true",
        help="keep Python's cycle-collector settings (default: freeze start-up and collect "
        "young objects every 100 000 allocations)",
    )
    _add_http_arguments(serve)
    from ._auth import add_auth_arguments

    add_auth_arguments(serve)
    from ._admin import add_admin_arguments

    add_admin_arguments(serve)
    from ._store import add_store_arguments

    add_store_arguments(serve)
    from ._observability import add_observability_arguments

    add_observability_arguments(serve)
    return serve


def _add_http_arguments(serve: argparse.ArgumentParser) -> None:
    http = serve.add_argument_group("HTTP (Streamable HTTP, legacy HTTP+SSE and WebSocket)")
    _add_endpoint_arguments(http)
    _add_admission_arguments(http)
    _add_limit_arguments(http)
    _add_worker_arguments(serve, http)


def _add_endpoint_arguments(http: Any) -> None:
    # Where and how it answers: the address, the path, sessions or none, the HTTP server.
    http.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        help="serve over HTTP on HOST (default 127.0.0.1) and PORT instead of stdio",
    )
    http.add_argument(
        "--path",
        type=endpoint_path,
        default="/mcp",
        help="the MCP endpoint path (default: /mcp)",
    )
    http.add_argument(
        "--stateless",
        action="store_true",
        help="no sessions: every POST is served on its own (no GET stream, no resumption)",
    )
    http.add_argument(
        "--response-mode",
        choices=("auto", "json", "sse"),
        default=None,
        help="how a POST is answered: auto (JSON unless something precedes the response; "
        "the default), json (always application/json: what precedes the response goes "
        "to the session's GET stream) or sse (always an SSE stream)",
    )
    http.add_argument(
        "--json-response",
        dest="response_mode",
        action="store_const",
        const="json",
        help="the same as --response-mode json",
    )
    http.add_argument(
        "--http-server",
        choices=("builtin", "hypercorn"),
        default=None,
        help="the HTTP server: mcpactor's own HTTP/1.1 server (builtin, the default and "
        "the fastest) or hypercorn's trio worker (HTTP/2)",
    )


def _add_admission_arguments(http: Any) -> None:
    # Who may reach it and read it (TLS, hosts, origins, a hook), and what it serves
    # beside the endpoint.
    http.add_argument(
        "--tls-cert",
        metavar="FILE",
        help="serve HTTPS with this PEM certificate (chain); needs --tls-key",
    )
    http.add_argument("--tls-key", metavar="FILE", help="the PEM private key of --tls-cert")
    http.add_argument(
        "--allowed-hosts",
        nargs="+",
        metavar="HOST",
        help="Host header values to accept (default on loopback: localhost, 127.0.0.1, "
        "[::1]; '*' accepts any)",
    )
    http.add_argument(
        "--allowed-origins",
        nargs="+",
        metavar="ORIGIN",
        help="Origin header values to accept (default on loopback: loopback origins, "
        "elsewhere same-origin only; '*' accepts any)",
    )
    http.add_argument(
        "--cors-origins",
        nargs="+",
        metavar="ORIGIN",
        help="origins whose browser pages may read the answers (CORS headers; default: none)",
    )
    http.add_argument(
        "--authenticate",
        metavar="MODULE:FUNCTION",
        help="call FUNCTION(headers) on every request: a principal, or a false value for "
        "401 (default: no authentication)",
    )
    http.add_argument(
        "--health-path",
        type=endpoint_path,
        default=None,
        metavar="PATH",
        help="where the liveness endpoint answers 200 (default: /healthz)",
    )
    http.add_argument(
        "--no-health",
        action="store_true",
        help="serve no liveness endpoint",
    )
    http.add_argument(
        "--ready-path",
        type=endpoint_path,
        default=None,
        metavar="PATH",
        help="where the readiness endpoint answers 200, or 503 while starting, stopping "
        "or when the --store does not answer (default: /readyz)",
    )
    http.add_argument(
        "--no-ready",
        action="store_true",
        help="serve no readiness endpoint",
    )
    http.add_argument(
        "--drain-delay",
        type=seconds,
        default=None,
        metavar="SECONDS",
        help="on SIGTERM, seconds the server goes on accepting while its readiness "
        "endpoint says 503, so that a load balancer probing it sends work elsewhere, "
        "before the listener closes and in-flight work gets --grace; waited only if a "
        "probe has asked (default: 5)",
    )
    http.add_argument(
        "--access-log",
        action="store_true",
        help="log one line per HTTP request (logger mcpactor.access, at INFO)",
    )


def _add_limit_arguments(http: Any) -> None:
    # How much it holds at once and for how long, and whose address a limit counts.
    http.add_argument(
        "--max-sessions",
        type=positive_count,
        metavar="N",
        help="live sessions at most; 503 past it (default: 10000)",
    )
    http.add_argument(
        "--max-sessions-per-client",
        type=positive_count,
        metavar="N",
        help="live sessions one client address may hold, and at the stateless revision "
        "its requests in flight (default: 256)",
    )
    http.add_argument(
        "--forwarded-allow-ips",
        type=address_list,
        metavar="ADDRESSES",
        help="comma-separated addresses or networks of reverse proxies whose forwarded "
        "client address (X-Forwarded-For, or --forwarded-header) counts for the per-client "
        "limit and the access log (default: none, the peer's address counts)",
    )
    http.add_argument(
        "--forwarded-header",
        choices=("x-forwarded-for", "forwarded"),
        help="the header those proxies write the client's address to (default: "
        "x-forwarded-for); only that one is read",
    )
    http.add_argument(
        "--max-connections",
        type=positive_count,
        metavar="N",
        help="open connections at most, WebSockets included (default: 1000)",
    )
    http.add_argument(
        "--session-idle-timeout",
        type=positive_seconds,
        metavar="SECONDS",
        help="a session without requests or connections this long ends (default: 1800)",
    )
    http.add_argument(
        "--keep-alive-timeout",
        type=positive_seconds,
        metavar="SECONDS",
        help="an idle keep-alive connection is closed after this long (default: 75)",
    )
    http.add_argument(
        "--request-timeout",
        type=positive_seconds,
        metavar="SECONDS",
        help="a request's head and body must arrive within this long (default: 30)",
    )


def _add_worker_arguments(serve: argparse.ArgumentParser, http: Any) -> None:
    http.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="serve from N processes on the one port, to use N cores (needs --stateless "
        "or --store; default: 1)",
    )
    # What the supervisor of --workers hands each worker: its listening socket, and the
    # pipe whose end tells it that the supervisor is gone.
    serve.add_argument("--worker-socket", type=int, help=argparse.SUPPRESS)
    # The first worker's admin listener, held by the supervisor so that a reload's new
    # first worker serves the page on the same port while the old one still does.
    serve.add_argument("--worker-admin-socket", type=int, help=argparse.SUPPRESS)
    serve.add_argument("--worker-lifeline", type=int, help=argparse.SUPPRESS)
    serve.add_argument("--worker-status", type=int, help=argparse.SUPPRESS)
    serve.add_argument("--worker-number", type=int, help=argparse.SUPPRESS)
