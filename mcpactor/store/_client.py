# The one Redis client of a process that shares a store, made from a StoreURL.
#
# coredis connects per command and reconnects on the next one after a connection drops,
# so an outage is seen by the commands made during it. Those must fail, not wait: the
# connect and read timeouts are set, so a command during an outage raises within a few
# seconds and the store that made it says StoreUnavailable instead of hanging a request.
# The PING at the start raises the same StoreUnavailable: an outage found earlier.
#
# Behind Sentinel (a redis+sentinel:// URL) every new connection asks the Sentinels where
# the primary is and checks that it says it is one (ROLE). When the primary fails, its
# connections break, the commands made until a replica is promoted fail at once (the old
# address refuses, or no Sentinel names a primary) with StoreUnavailable, and the first
# connection made after the promotion reaches the new primary: nothing waits for the
# switch, and nothing needs a restart. A primary that hangs instead of dying keeps its
# connections open, and coredis keeps using a connection whose command timed out; so
# the client asks the Sentinels where the primary is every FOLLOW_INTERVAL seconds, and
# drops every connection (subscriptions included) once the answer changes. A write that
# still reaches a demoted primary meets READONLY, StoreUnavailable too.

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator, Awaitable
from typing import Any, Final, TypeVar

import coredis
import coredis.exceptions
import trio
from coredis.connection import TCPLocation
from coredis.pool import SentinelConnectionPool

from ..protocol import describe_error
from ..runtime.http import StoreUnavailable
from ._url import CLUSTER_REFUSAL, StoreURL

__all__ = [
    "CONNECT_TIMEOUT",
    "FOLLOW_INTERVAL",
    "REACH_DEADLINE",
    "READ_TIMEOUT",
    "UNREACHABLE",
    "check_reachable",
    "connect",
    "open_client",
    "ping_problem",
    "reach",
    "refuse_cluster",
    "store_location",
]

#: seconds a connection to Redis may take to open
CONNECT_TIMEOUT: Final = 3.0
#: seconds a command's answer may take; longer is an outage, not a slow answer
READ_TIMEOUT: Final = 10.0
#: seconds ``check_reachable`` waits for its PING
REACH_DEADLINE: Final = 5.0
#: seconds between two questions to the Sentinels: where is the primary now?
FOLLOW_INTERVAL: Final = 1.0
#: what a failure to reach the store looks like: coredis's own errors (a lost or refused
#: connection, a server that answers with an error) and the sockets' beneath them
UNREACHABLE: Final = (coredis.exceptions.RedisError, OSError, TimeoutError)
# How much of the store's location an error message shows.
_MAX_LOCATION: Final = 200

T = TypeVar("T")


def _ssl_context(url: StoreURL) -> ssl.SSLContext:
    # A context of our own: the CA bundle, the client certificate, and verification
    # switched off only when the URL says verify=none.
    context = ssl.create_default_context(cafile=url.ca_file)
    if url.cert_file is not None:
        context.load_cert_chain(url.cert_file, url.key_file)
    if not url.verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def store_location(client: coredis.Redis[Any]) -> str:
    """Where ``client`` connects (host:port or socket path, never a password), bounded."""
    pool = client.connection_pool
    service = getattr(pool, "service_name", None)
    if service is not None:
        # Behind Sentinel the address changes with each failover; the service does not.
        return f"Sentinel service {service}"[:_MAX_LOCATION]
    location = str(getattr(pool, "location", "") or "redis")
    return location[:_MAX_LOCATION]


async def reach(what: str, location: str, call: Awaitable[T]) -> T:
    """Await ``call``; a failure to reach the store is a StoreUnavailable naming it (bounded).

    The error is raised without coredis's beneath it: that one holds the frames of the
    connection that failed, which a logged StoreUnavailable would otherwise keep alive.
    """
    try:
        return await call
    except coredis.exceptions.ReadOnlyError:
        error = StoreUnavailable(f"the {what} at {location} is a read-only replica now")
    except UNREACHABLE as exc:
        error = StoreUnavailable(
            f"the {what} at {location} cannot be reached: {describe_error(exc)}"
        )
    raise error


def connect(url: StoreURL) -> coredis.Redis[Any]:
    """A client of the store at ``url``; enter it (``async with``) before its first command.

    Raises:
        OSError: a TLS file named by the URL cannot be read.
        ssl.SSLError: a TLS file is not a certificate or key.
    """
    options: dict[str, Any] = {
        "db": url.db,
        "username": url.username,
        "password": url.password,
        "connect_timeout": CONNECT_TIMEOUT,
        "stream_timeout": READ_TIMEOUT,
    }
    if url.socket is not None:
        return coredis.Redis(host=None, port=None, unix_socket_path=url.socket, **options)
    if url.tls:
        options["ssl_context"] = _ssl_context(url)
    return coredis.Redis(host=url.host, port=url.port, **options)


@contextlib.asynccontextmanager
async def open_client(url: StoreURL) -> AsyncIterator[coredis.Redis[Any]]:
    """A client of the store at ``url``, entered: one server, or the primary Sentinel names.

    Raises:
        OSError: a TLS file named by the URL cannot be read.
        ssl.SSLError: a TLS file is not a certificate or key.
    """
    if not url.sentinels:
        async with connect(url) as client:
            yield client
        return
    timeouts: dict[str, Any] = {
        "connect_timeout": CONNECT_TIMEOUT,
        "stream_timeout": READ_TIMEOUT,
    }
    sentinel: coredis.Sentinel[bytes] = coredis.Sentinel(
        [TCPLocation(host, port) for host, port in url.sentinels],
        sentinel_kwargs=dict(timeouts),
        db=url.db,
        username=url.username,
        password=url.password,
        **timeouts,
    )
    assert url.service is not None
    async with (
        sentinel,
        sentinel.primary_for(url.service) as client,
        trio.open_nursery() as nursery,
    ):
        pool = client.connection_pool
        assert isinstance(pool, SentinelConnectionPool)
        nursery.start_soon(_follow_primary, pool)
        yield client
        nursery.cancel_scope.cancel()


async def _follow_primary(pool: SentinelConnectionPool) -> None:
    # The pool drops its connections itself when the address it is given changes.
    while True:
        await trio.sleep(FOLLOW_INTERVAL)
        # No Sentinel answers, or none names a primary: the commands say so, not this.
        with trio.move_on_after(READ_TIMEOUT), contextlib.suppress(*UNREACHABLE):
            await pool.get_primary_location()


async def refuse_cluster(client: coredis.Redis[Any], url: StoreURL) -> None:
    """Refuse a Redis Cluster node (the store needs one keyspace), found at the start.

    Raises:
        StoreUnavailable: the server says ``cluster_enabled:1``.
    """
    info = await reach("store", url.redacted(), client.info("cluster"))
    if str(info.get("cluster_enabled", 0)) == "1":
        raise StoreUnavailable(
            f"the store {url.redacted()} is a Redis Cluster node: {CLUSTER_REFUSAL}"
        )


async def check_reachable(
    client: coredis.Redis[Any], url: StoreURL, *, deadline: float = REACH_DEADLINE
) -> None:
    """PING the store once, within ``deadline`` seconds.

    Raises:
        StoreUnavailable: no answer in time, a refused connection, or a refused login;
            the message names the URL without its password.
    """
    why = await ping_problem(client, deadline=deadline)
    if why is not None:
        raise StoreUnavailable(f"the store {url.redacted()} is unreachable: {why}")


async def ping_problem(client: coredis.Redis[Any], *, deadline: float) -> str | None:
    """PING the store once, within ``deadline`` seconds: None if it answers, else why not."""
    try:
        with trio.fail_after(deadline):
            await client.ping()
    except trio.TooSlowError:
        return f"no answer to PING within {deadline:g} s"
    except coredis.exceptions.AuthenticationError as exc:
        return f"the login was refused ({str(exc)[:200]})"
    except UNREACHABLE as exc:
        return str(exc)[:200] or type(exc).__name__
    return None
