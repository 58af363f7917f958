"""mcpactor's benchmark server, written to the harness contract (bench/peers/contract.py).

    python bench/mcpactor_server.py stdio
    python bench/mcpactor_server.py http HOST PORT [--json] [--stateless] [--hypercorn] [--auth]
        [--admin] [--admin-watch]

(--hypercorn: the same app on hypercorn's trio worker instead of the built-in server;
--auth: a resource server checking the JWT of bench/auth/, whose keys are in a file;
--admin: the admin listener beside it on a free loopback port, as serve --admin runs it;
--admin-watch: and bench/admin_watcher.py holding the page's SSE stream open.)

Tools echo, echo_sync, add, sleep, progress; resource bench://static; prompt greet.
MCPBENCH_EVENT_LOG=FILE makes the sleep tool log when it starts and when its finally runs.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

import trio

from mcpactor import Context, Server

if TYPE_CHECKING:
    from mcpactor.auth import ResourceServer
    from mcpactor.transports.http import HttpOptions

_LOG_PATH = os.environ.get("MCPBENCH_EVENT_LOG")
_log_file = open(_LOG_PATH, "a", buffering=1) if _LOG_PATH else None  # noqa: SIM115


def _log_event(kind: str, seconds: float, how: str = "") -> None:
    if _log_file is not None:
        _log_file.write(f"{kind} {time.time():.6f} {seconds} {how}".rstrip() + "\n")


_WATCHER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "admin_watcher.py")

server = Server("bench-mcpactor")


@server.tool()
async def echo(text: str) -> str:
    """Return text unchanged."""
    return text


@server.tool()
def echo_sync(text: str) -> str:
    """Return text unchanged (plain function: runs in a worker thread)."""
    return text


@server.tool()
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def sleep(seconds: float) -> str:
    """Sleep for `seconds`."""
    _log_event("start", seconds)
    how = "error"
    try:
        await trio.sleep(seconds)
        how = "completed"
        return "slept"
    except trio.Cancelled:
        how = "cancelled"
        raise
    finally:
        _log_event("end", seconds, how)


@server.tool()
async def progress(steps: int, ctx: Context) -> str:
    """Report progress `steps` times."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps)
    return f"done {steps}"


@server.resource("bench://static")
def static_resource() -> str:
    """A static text resource."""
    return "static resource"


@server.prompt()
def greet(name: str) -> str:
    """A one-line prompt."""
    return f"Say hello to {name}."


#: sessions and connections the HTTP server allows (above http_streams' 10 000 and its callers)
HELD_AT_MOST = 20_000


def http_args(args: list[str]) -> tuple[str, int, HttpOptions]:
    """``HOST PORT [--json] [--stateless] [--hypercorn]`` as host, port and options."""
    from mcpactor.transports.http import HttpOptions

    flags = {a for a in args if a.startswith("--")}
    positional = [a for a in args if not a.startswith("--")]
    unknown = flags - {
        "--json",
        "--stateless",
        "--hypercorn",
        "--auth",
        "--admin",
        "--admin-watch",
        "--middleware",
    }
    if unknown:
        raise ValueError(f"unknown options: {sorted(unknown)}")
    host = positional[0] if positional else "127.0.0.1"
    port = int(positional[1]) if len(positional) > 1 else 8000
    # The SDK's default is an SSE response to every POST, --json its JSON mode: the same
    # two modes here ("sse", "json"), so the harness compares like with like.
    options = HttpOptions(
        response_mode="json" if "--json" in flags else "sse",
        stateless="--stateless" in flags,
        resource_server=_resource_server() if "--auth" in flags else None,
        # The peers set no limits; http_streams holds 10 000 sessions, each on its own
        # connection, all from one address: raised as an operator serving that would.
        max_sessions=HELD_AT_MOST,
        max_connections=HELD_AT_MOST,
        max_sessions_per_client=HELD_AT_MOST,
    )
    return host, port, options


def _resource_server() -> ResourceServer:
    # The token bench/auth/make_token.py signed: its issuer and audience, its public key.
    from mcpactor.auth import ResourceServer, verifier_from

    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "auth")
    with open(os.path.join(here, "settings.json"), "rb") as file:
        settings = json.load(file)
    verifier = verifier_from(
        issuers=[settings["issuer"]],
        resource=settings["resource"],
        jwks_file=os.path.join(here, "jwks.json"),
    )
    return ResourceServer(
        resource=settings["resource"],
        authorization_servers=[settings["issuer"]],
        verifier=verifier,
    )


async def _with_admin(serve: Callable[[], Awaitable[object]], *, watch: bool) -> None:
    # What serve --admin does: the Observatory first, so that it sees every session, then
    # the admin listener beside the server in the same trio run.
    import secrets

    from mcpactor.admin import create_admin_app, serve_admin
    from mcpactor.runtime import Observatory

    observatory = Observatory()
    observatory.install()
    observatory.serve(server)
    token = secrets.token_urlsafe(32)
    app = create_admin_app(observatory, token=token)
    async with trio.open_nursery() as nursery:
        host, port = await nursery.start(
            functools.partial(serve_admin, app, host="127.0.0.1", port=0)
        )
        print(f"bench: admin page http://{host}:{port}/", file=sys.stderr, flush=True)
        if watch:
            env = {**os.environ, "MCPBENCH_ADMIN_TOKEN": token}
            # It detaches itself; this waits only for its first fork to return.
            await trio.run_process([sys.executable, _WATCHER, f"http://{host}:{port}/"], env=env)
        await serve()
        nursery.cancel_scope.cancel()


async def _passing(call: Any, call_next: Any) -> AsyncIterator[Any]:
    # One middleware that passes every message through: what a layer costs.
    async for message in call_next(call):
        yield message


def main(argv: list[str]) -> None:
    """Serve the bench server on the transport the harness asks for."""
    if len(argv) < 2 or argv[1] not in ("stdio", "http"):
        sys.exit(
            f"usage: {argv[0]} stdio [--middleware]"
            " | http HOST PORT [--json] [--stateless] [--hypercorn] [--auth]"
            " [--admin] [--admin-watch] [--middleware]"
        )
    if "--middleware" in argv:
        server.middleware.use(_passing)
    if argv[1] == "stdio":
        from mcpactor.transports.stdio import serve_stdio

        trio.run(serve_stdio, server)
        return
    from mcpactor.transports.http import serve_http

    try:
        host, port, options = http_args(argv[2:])
    except ValueError as exc:
        sys.exit(str(exc))
    serve = functools.partial(
        serve_http,
        server,
        host=host,
        port=port,
        options=options,
        handle_signals=True,
        http_server="hypercorn" if "--hypercorn" in argv else "builtin",
    )
    if "--admin" in argv or "--admin-watch" in argv:
        trio.run(functools.partial(_with_admin, serve, watch="--admin-watch" in argv))
        return
    trio.run(serve)


if __name__ == "__main__":
    main(sys.argv)
