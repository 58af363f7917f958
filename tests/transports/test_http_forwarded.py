"""The client behind a reverse proxy: forwarded addresses are believed from trusted proxies
only, read from the right, for the per-client session limit and the access log, on both
HTTP servers, in crafted requests and behind a real nginx."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

import httpx
import orjson
import pytest

from mcpactor._exceptions import ConfigError
from mcpactor.cli import _build_parser
from mcpactor.config import parse_config
from mcpactor.transports import HttpOptions
from mcpactor.transports._forwarded import TrustedProxies, parse_networks
from mcpactor.transports.http import HttpServerKind

from ._cli import server_file
from ._http_client import McpClient, SocketClient
from ._http_server import Probe, asgi_client, make_server, served_app
from .test_http_security import INITIALIZE

NGINX: Final = shutil.which("nginx") or (
    "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None
)
#: seconds a process may take to start, and a scenario to run
GUARD: Final = 30.0


@pytest.fixture
def probe() -> Probe:
    return Probe()


@pytest.fixture(params=["builtin", "hypercorn"])
def http_server(request: pytest.FixtureRequest) -> HttpServerKind:
    kind: HttpServerKind = request.param
    return kind


def _proxies(*networks: str, header: str = "x-forwarded-for") -> TrustedProxies:
    return TrustedProxies(parse_networks(networks, option="test"), header)  # type: ignore[arg-type]


def _headers(name: str, *values: str) -> list[tuple[bytes, bytes]]:
    return [(b"host", b"x"), *((name.encode(), value.encode()) for value in values)]


# --- reading the header ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("peer", "values", "client"),
    [
        # A peer that is not a trusted proxy keeps its address, whatever it sends.
        ("198.51.100.1", ["203.0.113.7"], None),
        # The trusted proxy's client.
        ("127.0.0.1", ["203.0.113.7"], "203.0.113.7"),
        # What the client wrote itself, left of it, does not count.
        ("127.0.0.1", ["6.6.6.6, 203.0.113.7"], "203.0.113.7"),
        # Trusted proxies in a chain are skipped from the right.
        ("127.0.0.1", ["6.6.6.6, 203.0.113.7, 10.1.2.3"], "203.0.113.7"),
        # Repeated fields are one list.
        ("127.0.0.1", ["6.6.6.6", "203.0.113.7, 10.1.2.3"], "203.0.113.7"),
        # Every hop a trusted proxy: the farthest is the client.
        ("127.0.0.1", ["10.0.0.9, 10.1.2.3"], "10.0.0.9"),
        # Ports and brackets are not part of the address.
        ("127.0.0.1", ["203.0.113.7:4711"], "203.0.113.7"),
        ("127.0.0.1", ["[2001:db8::1]:4711"], "2001:db8::1"),
        ("127.0.0.1", ["2001:db8::1"], "2001:db8::1"),
        # Not an address a proxy writes: the proxy's own address counts.
        ("127.0.0.1", ["203.0.113.7, unknown"], None),
        ("127.0.0.1", ["203.0.113.7, \x1b[31mred"], None),
        ("127.0.0.1", [""], None),
        ("127.0.0.1", [], None),
        # An IPv4-mapped peer is its IPv4 address.
        ("::ffff:127.0.0.1", ["203.0.113.7"], "203.0.113.7"),
    ],
)
def test_x_forwarded_for_is_read_from_the_right(
    peer: str, values: list[str], client: str | None
) -> None:
    proxies = _proxies("127.0.0.1", "10.0.0.0/8")
    assert proxies.client(peer, _headers("x-forwarded-for", *values)) == client


def test_the_forwarded_header_is_read_when_asked_for_and_only_then() -> None:
    forwarded = _proxies("127.0.0.1", header="forwarded")
    element = 'for=6.6.6.6, for="[2001:db8::7]:4711";proto=https;by=127.0.0.1'
    assert forwarded.client("127.0.0.1", _headers("Forwarded", element)) == "2001:db8::7"
    assert forwarded.client("127.0.0.1", _headers("forwarded", "proto=https")) is None
    # The other header is whatever a client sent, passed on untouched by the proxy.
    assert forwarded.client("127.0.0.1", _headers("x-forwarded-for", "6.6.6.6")) is None
    plain = _proxies("127.0.0.1")
    assert plain.client("127.0.0.1", _headers("forwarded", "for=6.6.6.6")) is None


def test_a_header_of_thousands_of_hops_is_read_only_from_its_end() -> None:
    proxies = _proxies("127.0.0.0/8")
    hops = ", ".join(["6.6.6.6"] * 100_000 + ["127.0.0.9"] * 40)
    # Past 32 trusted hops the reading stops: the farthest read is the client.
    assert proxies.client("127.0.0.1", _headers("x-forwarded-for", hops)) == "127.0.0.9"
    hops = ", ".join(["6.6.6.6"] * 100_000 + ["203.0.113.7"])
    assert proxies.client("127.0.0.1", _headers("x-forwarded-for", hops)) == "203.0.113.7"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"forwarded_allow_ips": ("127.0.0.1", "nginx")}, "forwarded_allow_ips: expected IP"),
        ({"forwarded_allow_ips": "10.0.0.0/33"}, "forwarded_allow_ips: expected IP"),
        ({"forwarded_header": "x-real-ip"}, "forwarded_header must be"),
    ],
)
def test_wrong_proxy_options_are_refused(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        HttpOptions(**options)  # type: ignore[arg-type]


def test_the_flags_and_the_config_keys(tmp_path: Path) -> None:
    parser = _build_parser()
    args = parser.parse_args(
        ["serve", "x.py", "--forwarded-allow-ips", "127.0.0.1, 10.0.0.0/8,::1"]
    )
    assert args.forwarded_allow_ips == ("127.0.0.1", "10.0.0.0/8", "::1")
    assert args.forwarded_header is None
    source = tmp_path / "mcpactor.toml"
    http = parse_config(
        {"http": {"forwarded_allow_ips": ["10.0.0.0/8"], "forwarded_header": "forwarded"}},
        source=source,
    ).http
    options = HttpOptions(**http.options())
    assert options.forwarded_allow_ips == ("10.0.0.0/8",)
    assert options.forwarded_header == "forwarded"
    with pytest.raises(ConfigError, match=r"http\.forwarded_allow_ips: expected IP"):
        parse_config({"http": {"forwarded_allow_ips": ["proxy.internal"]}}, source=source)
    with pytest.raises(ConfigError, match=r"http\.forwarded_header: expected one of"):
        parse_config({"http": {"forwarded_header": "x-real-ip"}}, source=source)


def test_a_wrong_flag_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        _build_parser().parse_args(["serve", "x.py", "--forwarded-allow-ips", "127.0.0.1,nginx"])
    assert exited.value.code == 2
    error = capsys.readouterr().err
    assert "--forwarded-allow-ips" in error
    assert "'nginx'" in error


# --- crafted requests --------------------------------------------------------------------


async def test_without_trusted_proxies_the_header_is_ignored(probe: Probe) -> None:
    # The default: a proxy on this host makes every client loopback, which is not counted.
    options = HttpOptions(max_sessions_per_client=2)
    async with asgi_client(make_server(probe), options=options) as (app, http):
        for _ in range(3):
            response = await McpClient(http).post(INITIALIZE, x_forwarded_for="203.0.113.7")
            assert response.status == 200
        assert app.manager.statistics().clients == 0


async def test_the_limit_counts_the_client_a_trusted_proxy_names(probe: Probe) -> None:
    options = HttpOptions(max_sessions_per_client=2, forwarded_allow_ips="127.0.0.1")
    async with asgi_client(make_server(probe), options=options) as (app, http):
        for _ in range(2):
            assert (
                await McpClient(http).post(INITIALIZE, x_forwarded_for="203.0.113.7")
            ).status == 200
        refused = await McpClient(http).post(INITIALIZE, x_forwarded_for="6.6.6.6, 203.0.113.7")
        assert refused.status == 503
        other = await McpClient(http).post(INITIALIZE, x_forwarded_for="203.0.113.8")
        assert other.status == 200
        assert app.manager.statistics().clients == 2
        # A peer that is no proxy of ours is counted as itself, whatever it says.
        http.client = ("198.51.100.1", 40000)
        for _ in range(2):
            said = await McpClient(http).post(INITIALIZE, x_forwarded_for="203.0.113.9")
            assert said.status == 200
        assert (
            await McpClient(http).post(INITIALIZE, x_forwarded_for="203.0.113.10")
        ).status == 503
        assert app.manager.statistics().clients == 3


async def test_both_servers_count_and_log_the_forwarded_client(
    probe: Probe, http_server: HttpServerKind, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcpactor.access")
    options = HttpOptions(
        max_sessions_per_client=2, forwarded_allow_ips=("127.0.0.1",), access_log=True
    )
    async with served_app(make_server(probe), options=options, http_server=http_server) as (
        app,
        http,
    ):
        for _ in range(2):
            assert (
                await McpClient(http).post(INITIALIZE, x_forwarded_for="203.0.113.7")
            ).status == 200
        assert (
            await McpClient(http).post(INITIALIZE, x_forwarded_for="203.0.113.7")
        ).status == 503
        # Another loopback peer is no trusted proxy: its header is ignored, and its own
        # address (loopback, not counted) is what is logged.
        elsewhere = SocketClient(http.host, http.port, http.nursery, local_address="127.0.0.2")
        try:
            for _ in range(3):
                response = await McpClient(elsewhere).post(
                    INITIALIZE, x_forwarded_for="203.0.113.7"
                )
                assert response.status == 200
        finally:
            await elsewhere.aclose()
        assert app.manager.statistics().clients == 1
    lines = [r.getMessage() for r in caplog.records if r.name == "mcpactor.access"]
    assert [line.split(" ", 1)[0] for line in lines[:3]] == ["203.0.113.7"] * 3
    assert all(re.match(r"127\.0\.0\.2:\d+ ", line) for line in lines[3:6]), lines


# --- behind a real nginx -----------------------------------------------------------------

_NGINX_CONF: Final = """\
worker_processes 1;
{user}
error_log {prefix}/error.log info;
pid {prefix}/nginx.pid;
events {{ worker_connections 64; }}
http {{
    client_body_temp_path {prefix}/client_body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    access_log off;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://127.0.0.1:{upstream};
            proxy_bind 127.0.0.1;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_buffering off;
        }}
    }}
}}
"""

SERVER: Final = '''
from mcpactor import Server

server = Server("behind", "1.0.0")


@server.tool()
async def hello() -> str:
    """Say hello."""
    return "hello"
'''


def _wait_for(read: Callable[[], object], what: str, process: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + GUARD
    while True:
        found = read()
        if found:
            return found.group(0).decode() if isinstance(found, re.Match) else str(found)
        if process.poll() is not None:
            pytest.fail(f"{what} exited with {process.returncode}")
        if time.monotonic() > deadline:
            pytest.fail(f"{what} was not ready within {GUARD} s")
        time.sleep(0.05)


@contextlib.contextmanager
def _behind_nginx(directory: Path, *flags: str) -> Iterator[tuple[int, Path]]:
    """``mcpactor serve`` with ``flags`` behind nginx; yields nginx's port and the log."""
    if NGINX is None:
        pytest.skip("nginx is not installed (CI installs Debian's nginx)")
    target = server_file(directory, "behind.py", SERVER)
    log = directory / "serve.log"
    with contextlib.ExitStack() as stack:
        output = stack.enter_context(log.open("wb"))
        served = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mcpactor",
                "serve",
                str(target),
                "--http",
                "127.0.0.1:0",
                "--access-log",
                "--allowed-hosts",
                "*",
                *flags,
            ],
            stdin=subprocess.DEVNULL,
            stderr=output,
        )
        stack.callback(_stop, served)
        line = _wait_for(
            lambda: re.search(rb"serving http://127\.0\.0\.1:(\d+)/mcp", log.read_bytes()),
            "mcpactor serve",
            served,
        )
        upstream = int(re.search(r"127\.0\.0\.1:(\d+)", line).group(1))  # type: ignore[union-attr]
        prefix = directory / "nginx"
        prefix.mkdir()
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        conf = prefix / "nginx.conf"
        conf.write_text(
            _NGINX_CONF.format(
                prefix=prefix,
                port=port,
                upstream=upstream,
                user="user root;" if os.geteuid() == 0 else "",
            )
        )
        nginx = subprocess.Popen(
            [NGINX, "-p", str(prefix), "-c", str(conf), "-g", "daemon off;"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        stack.callback(_stop, nginx)
        _wait_for(lambda: _healthy(port), "nginx", nginx)
        yield port, log


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=GUARD)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _healthy(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1.0).status_code == 200
    except httpx.TransportError:
        return False


def _initialize(client: httpx.Client, port: int, forwarded: str) -> int:
    response = client.post(
        f"http://127.0.0.1:{port}/mcp",
        content=orjson.dumps(INITIALIZE),
        headers={
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
            "x-forwarded-for": forwarded,
        },
    )
    return response.status_code


def _client(source: str) -> httpx.Client:
    # Connections from ``source``: a client other than nginx, on this host.
    return httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=GUARD)


def _access_clients(log: Path) -> list[str]:
    lines = log.read_text(errors="replace").splitlines()
    return [
        line.split(": ", 1)[1].split(" ", 1)[0]
        for line in lines
        if line.startswith("INFO mcpactor.access: ") and '"POST /mcp"' in line
    ]


def test_behind_nginx_a_client_cannot_name_itself(tmp_path: Path) -> None:
    # nginx (127.0.0.1) is trusted; the client at 127.0.0.5 sends a made-up address,
    # which nginx passes on with the client's real one appended.
    with (
        _behind_nginx(tmp_path, "--forwarded-allow-ips", "127.0.0.1") as (port, log),
        _client("127.0.0.5") as client,
    ):
        assert _initialize(client, port, "203.0.113.7") == 200
    assert _access_clients(log) == ["127.0.0.5"]


def test_behind_nginx_the_limit_counts_each_client(tmp_path: Path) -> None:
    # A chain: the client's own proxy (127.0.0.5, trusted too) names the client, nginx
    # appends that proxy. The per-client limit counts the client, not nginx's loopback.
    with (
        _behind_nginx(
            tmp_path, "--forwarded-allow-ips", "127.0.0.0/8", "--max-sessions-per-client", "2"
        ) as (port, log),
        _client("127.0.0.5") as client,
    ):
        assert [_initialize(client, port, "203.0.113.7") for _ in range(3)] == [200, 200, 503]
        assert _initialize(client, port, "203.0.113.8") == 200
    assert _access_clients(log) == ["203.0.113.7"] * 3 + ["203.0.113.8"]


def test_behind_nginx_without_trusted_proxies_one_client_is_not_limited(tmp_path: Path) -> None:
    # What the option is for: without it every client is nginx's loopback, uncounted.
    with (
        _behind_nginx(tmp_path, "--max-sessions-per-client", "2") as (port, log),
        _client("127.0.0.5") as client,
    ):
        assert [_initialize(client, port, "203.0.113.7") for _ in range(3)] == [200] * 3
    assert all(address.startswith("127.0.0.1:") for address in _access_clients(log))
