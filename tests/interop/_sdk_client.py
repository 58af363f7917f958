"""The official MCP Python SDK client, driving ``examples/everything.py`` over stdio.

The SDK runs on anyio/asyncio and our test suite on trio, so an SDK session lives in an
asyncio event loop of its own (anyio's blocking portal, a thread) and tests hand it
coroutines through `SdkClient.run`. One server process serves every test of a revision.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, Generic, TypeVar

import anyio
import mcp.types as types
from anyio.from_thread import BlockingPortal
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.session import ClientRequestContext
from pydantic import FileUrl

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[2]
EVERYTHING = ROOT / "examples" / "everything.py"

#: the session revisions, oldest first
REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")

#: seconds any one wait may take before the test fails (the server answers in milliseconds)
TIMEOUT = 10.0

#: what the client's roots/list callback answers
CLIENT_ROOTS = (
    types.Root(uri=FileUrl("file:///srv/project"), name="project"),
    types.Root(uri=FileUrl("file:///srv/docs"), name="docs"),
)

#: what the client's model "says" to every sampling request
MODEL = "stub-model-1"
MODEL_ANSWER = "Because air scatters blue light the most."

#: what the "user" answers to every elicitation request
ELICITED = {"guests": 4, "terrace": True}


def has_elicitation(version: str) -> bool:
    """Whether the revision defines elicitation (2025-06-18 and later)."""
    return version >= "2025-06-18"


def has_structured_content(version: str) -> bool:
    """Whether tool results of the revision carry ``structuredContent``."""
    return version >= "2025-06-18"


class Received(Generic[T]):
    """What the client received of one kind, in order of arrival.

    The SDK hands each notification to its callbacks in a task of its own, so a
    notification may arrive after the response that followed it on the wire: tests wait
    for what they expect instead of looking once.
    """

    def __init__(self) -> None:
        self.items: list[T] = []
        self._grew = anyio.Event()

    def add(self, item: T) -> None:
        """Record ``item`` and wake the waiters."""
        self.items.append(item)
        self._grew.set()
        self._grew = anyio.Event()

    def mark(self) -> int:
        """A position to look after: what arrives from now on."""
        return len(self.items)

    def since(self, mark: int) -> list[T]:
        """What arrived after ``mark``."""
        return self.items[mark:]

    async def wait_for(self, predicate: Callable[[T], bool], *, after: int = 0) -> T:
        """Wait for an item (arrived after ``after``) that satisfies ``predicate``."""
        with anyio.fail_after(TIMEOUT):
            while True:
                for item in self.items[after:]:
                    if predicate(item):
                        return item
                await self._grew.wait()


class SdkClient:
    """One SDK session with the everything server at one revision, plus what it received."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.session: ClientSession | None = None
        self.portal: BlockingPortal | None = None
        self.initialize_result: types.InitializeResult | None = None
        self.logs: Received[types.LoggingMessageNotificationParams] = Received()
        self.notifications: Received[types.ServerNotification] = Received()
        self.sampling_requests: list[types.CreateMessageRequestParams] = []
        self.elicitation_requests: list[types.ElicitRequestParams] = []
        self.roots_requests = 0

    @property
    def sdk(self) -> ClientSession:
        """The SDK session (open while the fixture holds this client)."""
        assert self.session is not None, "the session is not open"
        return self.session

    def run(self, fn: Callable[[SdkClient], Awaitable[T]]) -> T:
        """Run ``fn(self)`` in the SDK's event loop and return its result."""
        assert self.portal is not None, "the client is not running in a portal"
        return self.portal.call(fn, self)

    # --- the client's side of server→client requests -------------------------------

    async def on_sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.sampling_requests.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=MODEL_ANSWER),
            model=MODEL,
            stop_reason="endTurn",
        )

    async def on_elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        self.elicitation_requests.append(params)
        return types.ElicitResult(action="accept", content=dict(ELICITED))

    async def on_list_roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        self.roots_requests += 1
        return types.ListRootsResult(roots=list(CLIENT_ROOTS))

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.add(params)

    async def on_message(self, message: Any) -> None:
        if not isinstance(message, Exception):
            self.notifications.add(message)


def server_parameters() -> StdioServerParameters:
    """How the SDK starts the server: ``python -m mcpactor serve examples/everything.py``."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcpactor", "serve", str(EVERYTHING)],
        cwd=ROOT,
    )


def capabilities(
    version: str, *, sampling: bool = True, roots: bool = True, elicitation: bool = True
) -> types.ClientCapabilities:
    """The capabilities a client with these callbacks declares at ``version``."""
    return types.ClientCapabilities(
        sampling=types.SamplingCapability() if sampling else None,
        roots=types.RootsCapability(list_changed=True) if roots else None,
        elicitation=(
            types.ElicitationCapability() if elicitation and has_elicitation(version) else None
        ),
    )


async def initialize_at(
    session: ClientSession, version: str, client_capabilities: types.ClientCapabilities
) -> types.InitializeResult:
    """Open ``session`` offering protocol revision ``version``.

    ``ClientSession.initialize()`` in mcp 2.3.0 always offers its newest handshake
    revision and has no option to offer another, so this sends the same ``initialize``
    request with the revision under test, then does what ``initialize()`` does with the
    answer: ``adopt`` it (the SDK then validates every later message against that
    revision's schema) and send ``notifications/initialized``. Only public methods are used.
    """
    result = await session.send_request(
        types.InitializeRequest(
            params=types.InitializeRequestParams(
                protocol_version=version,
                capabilities=client_capabilities,
                client_info=types.Implementation(name="mcpactor-interop-tests", version="1.0"),
            )
        ),
        types.InitializeResult,
    )
    session.adopt(result)
    await session.send_notification(types.InitializedNotification())
    return result


@asynccontextmanager
async def open_sdk_client(version: str) -> AsyncIterator[SdkClient]:
    """Start the server and open an SDK session with it at ``version``, every callback set."""
    client = SdkClient(version)
    async with (
        stdio_client(server_parameters()) as (read, write),
        ClientSession(
            read,
            write,
            read_timeout_seconds=TIMEOUT,
            sampling_callback=client.on_sampling,
            elicitation_callback=client.on_elicitation if has_elicitation(version) else None,
            list_roots_callback=client.on_list_roots,
            logging_callback=client.on_log,
            message_handler=client.on_message,
        ) as session,
    ):
        client.session = session
        client.initialize_result = await initialize_at(session, version, capabilities(version))
        yield client


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def serving_http(*arguments: str, check_exit: bool = False) -> Iterator[int]:
    """Run ``mcpactor serve ARGUMENTS --http 127.0.0.1:PORT`` and yield PORT once it listens.

    With ``check_exit``, the server must exit cleanly when it is terminated.
    """
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "mcpactor", "serve", *arguments, "--http", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stderr is not None
        # The server says where it listens once it does: no polling, no sleeping.
        for line in process.stderr:
            if b"serving http://" in line:
                break
        else:
            raise AssertionError(f"the server exited with {process.wait()} before listening")
        yield port
    finally:
        process.terminate()
        code = process.wait(timeout=TIMEOUT)
        if process.stderr is not None:
            process.stderr.close()
    if check_exit:
        assert code == 0
