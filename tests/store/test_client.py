"""The store's Redis client: what the URL says reaches the server, and a dead store is said."""

from __future__ import annotations

import gc
import socket
import ssl
from pathlib import Path

import pytest
import trio

from mcpactor.runtime.http import StoreUnavailable
from mcpactor.store import parse_store_url
from mcpactor.store._client import _ssl_context, check_reachable, connect

from .conftest import free_port, needs_redis, running_redis


async def test_a_unix_socket_and_a_database_are_used(redis_socket: str) -> None:
    client = connect(parse_store_url(f"unix://{redis_socket}?db=3"))
    async with client:
        await check_reachable(client, parse_store_url(f"unix://{redis_socket}?db=3"))
        await client.set("where", "three")
    # Database 0 does not hold what was written to database 3.
    other = connect(parse_store_url(f"unix://{redis_socket}"))
    async with other:
        assert await other.get("where") is None
    again = connect(parse_store_url(f"unix://{redis_socket}?db=3"))
    async with again:
        assert await again.get("where") == b"three"
        await again.delete(["where"])


async def test_a_tcp_port_is_used(redis_port: int) -> None:
    url = parse_store_url(f"redis://127.0.0.1:{redis_port}/0")
    client = connect(url)
    async with client:
        await check_reachable(client, url)
        assert await client.ping() in (b"PONG", "PONG")


@needs_redis
async def test_a_password_is_sent_and_a_wrong_one_is_said_without_it() -> None:
    port = free_port()
    with running_redis("--port", str(port), "--bind", "127.0.0.1", "--requirepass", "s3cret"):
        good = parse_store_url(f"redis://:s3cret@127.0.0.1:{port}")
        client = connect(good)
        async with client:
            await check_reachable(client, good)
        bad = parse_store_url(f"redis://:wrong-one@127.0.0.1:{port}")
        client = connect(bad)
        async with client:
            with pytest.raises(StoreUnavailable) as caught:
                await check_reachable(client, bad)
    message = str(caught.value)
    assert f"redis://:***@127.0.0.1:{port}/0" in message
    assert "wrong-one" not in message


# coredis leaves the memory streams of a connection that never opened unclosed; they are
# collected here, in the test that made them, and their ResourceWarning is not ours.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_nobody_listening_is_said_with_the_redacted_url() -> None:
    url = parse_store_url(f"redis://user:pw-xyz@127.0.0.1:{free_port()}/2")
    client = connect(url)
    async with client:
        with pytest.raises(StoreUnavailable) as caught:
            await check_reachable(client, url)
    message = str(caught.value)
    assert message.startswith(f"the store {url.redacted()} is unreachable: ")
    assert "pw-xyz" not in message
    del client, caught
    gc.collect()


async def test_a_store_that_never_answers_fails_within_the_deadline() -> None:
    # A listening socket nobody accepts on: the connection opens (the backlog takes
    # it), the PING is never answered.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        url = parse_store_url(f"redis://127.0.0.1:{silent.getsockname()[1]}")
        client = connect(url)
        started = trio.current_time()
        async with client:
            with pytest.raises(StoreUnavailable, match=r"no answer to PING within 0\.5 s"):
                await check_reachable(client, url, deadline=0.5)
        assert trio.current_time() - started < 5


def test_tls_options_make_the_context(tmp_path: Path) -> None:
    trustme = pytest.importorskip("trustme")
    authority = trustme.CA()
    ca = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(ca))
    issued = authority.issue_cert("client.example")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    issued.cert_chain_pems[0].write_to_path(str(cert))
    issued.private_key_pem.write_to_path(str(key))
    context = _ssl_context(parse_store_url(f"rediss://db.example?ca={ca}&cert={cert}&key={key}"))
    assert context.verify_mode is ssl.CERT_REQUIRED
    assert context.check_hostname
    assert any(entry.get("subject") for entry in context.get_ca_certs())
    loose = _ssl_context(parse_store_url(f"rediss://db.example?ca={ca}&verify=none"))
    assert loose.verify_mode is ssl.CERT_NONE
    assert not loose.check_hostname


def test_a_missing_ca_file_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        connect(parse_store_url(f"rediss://db.example?ca={tmp_path / 'none.pem'}"))
