"""HTTPS on both HTTP servers (``tls_cert``/``tls_key``), with certificates from trustme.

Our own client and the official SDK's Streamable HTTP client talk to the server over
TLS; the SDK runs on asyncio, in a worker thread of its own, against the server in this
trio run.
"""

from __future__ import annotations

import contextlib
import functools
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
import trustme

from mcpactor.client import connect_http
from mcpactor.transports import HttpOptions, serve_http
from mcpactor.transports.http import HttpServerKind

from ._http_server import Probe, make_server

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(params=["builtin", "hypercorn"])
def http_server(request: pytest.FixtureRequest) -> HttpServerKind:
    kind: HttpServerKind = request.param
    return kind


@pytest.fixture
def certificates(tmp_path: Path) -> tuple[HttpOptions, ssl.SSLContext]:
    """Options serving a certificate for 127.0.0.1, and a client context trusting it."""
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.private_key_and_cert_chain_pem.write_to_path(str(cert_file))
    cert.private_key_pem.write_to_path(str(key_file))
    client = ssl.create_default_context()
    ca.configure_trust(client)
    return HttpOptions(tls_cert=str(cert_file), tls_key=str(key_file)), client


@contextlib.asynccontextmanager
async def https(options: HttpOptions, kind: HttpServerKind) -> AsyncIterator[int]:
    async with trio.open_nursery() as nursery:
        _, port = await nursery.start(
            functools.partial(
                serve_http, make_server(Probe()), port=0, options=options, http_server=kind
            )
        )
        yield port
        nursery.cancel_scope.cancel()


async def test_our_client_over_https(
    certificates: tuple[HttpOptions, ssl.SSLContext], http_server: HttpServerKind
) -> None:
    options, context = certificates
    async with (
        https(options, http_server) as port,
        connect_http(
            f"https://127.0.0.1:{port}/mcp", ssl_context=context, initialize=True
        ) as client,
    ):
        result = await client.call_tool("add", {"a": 20, "b": 22})
        assert result["structuredContent"] == {"result": 42}
        counted = await client.call_tool("count", {"steps": 3})
        assert counted["content"][0]["text"] == "counted 3"


async def test_the_official_client_over_https(
    certificates: tuple[HttpOptions, ssl.SSLContext], http_server: HttpServerKind
) -> None:
    import anyio
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    options, context = certificates
    seen: dict[str, object] = {}

    async def main(url: str) -> None:
        with anyio.fail_after(30):
            async with (
                httpx2.AsyncClient(verify=context) as http,
                streamable_http_client(url, http_client=http) as (read, write, *_),
                ClientSession(read, write) as session,
            ):
                seen["version"] = (await session.initialize()).protocol_version
                added = await session.call_tool("add", {"a": 1, "b": 2})
                seen["added"] = added.structured_content

    async with https(options, http_server) as port:
        url = f"https://127.0.0.1:{port}/mcp"
        await trio.to_thread.run_sync(functools.partial(anyio.run, main, url, backend="asyncio"))
    assert seen == {"version": "2025-11-25", "added": {"result": 3}}


async def test_plain_http_to_an_https_port_is_dropped_and_the_server_carries_on(
    certificates: tuple[HttpOptions, ssl.SSLContext], http_server: HttpServerKind
) -> None:
    options, context = certificates
    async with https(options, http_server) as port:
        async with await trio.open_tcp_stream("127.0.0.1", port) as plain:
            await plain.send_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            answer = b""
            with trio.fail_after(10), contextlib.suppress(trio.BrokenResourceError):
                while chunk := await plain.receive_some(65536):
                    answer += chunk
            assert b"200" not in answer
        raw = await trio.open_tcp_stream("127.0.0.1", port)
        async with trio.SSLStream(raw, context, server_hostname="127.0.0.1") as secure:
            await secure.send_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            answer = b""
            while b'{"status":"ok"}' not in answer:
                answer += await secure.receive_some(65536)
            assert answer.startswith(b"HTTP/1.1 200 ")


def test_a_certificate_without_its_key_is_refused() -> None:
    with pytest.raises(ValueError, match="tls_cert and tls_key go together"):
        HttpOptions(tls_cert="cert.pem")
