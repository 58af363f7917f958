"""Three replicas of one server behind a real load balancer, sharing one Redis: the harness.

`deployment` starts a redis-server on a free loopback port, three
``mcpactor serve tests/store/replica_server.py --http 127.0.0.1:P --store redis://...``
processes (one state key file between them) and a load balancer in the foreground, in a
directory of its own, balancing requests over the three in plain round robin: no
stickiness of any kind, so consecutive requests of one client land on different
replicas. The balancer is Debian's nginx, or HAProxy when a test asks for it; either
passes streams through as they come (nginx: ``proxy_buffering off``, HTTP/1.1 to the
replicas; both: an hour's timeouts), sends a request that cannot reach a replica to
the next one, and names the replica that answered each request in an ``X-Replica``
response header (nginx also in its access log).

Readiness is polled, each process within a bounded time: redis answers ``PING``, each
replica and then the balancer answer ``/healthz`` with 200.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, Any, Final

import attrs
import httpx
import orjson
import pytest

from .conftest import REDIS, free_port

ROOT: Final = Path(__file__).resolve().parents[2]
SERVER: Final = Path(__file__).with_name("replica_server.py")
NGINX: Final = shutil.which("nginx") or (
    "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None
)
HAPROXY: Final = shutil.which("haproxy") or (
    "/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").exists() else None
)

#: seconds a process may take to become ready
READY_TIMEOUT: Final = 30.0
#: seconds between two readiness probes
_PROBE_PAUSE: Final = 0.05
#: how much of a process's log a failure message quotes
_LOG_TAIL: Final = 4000

_NGINX_CONF: Final = """\
worker_processes 1;
{user}
error_log {prefix}/error.log info;
pid {prefix}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
    client_body_temp_path {prefix}/client_body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    log_format replica '$request_method $upstream_addr $status';
    access_log {prefix}/access.log replica;
    # Plain round robin: no ip_hash, no hash, no sticky cookie.
    upstream replicas {{
{servers}
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://replicas;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            # Streams pass as they are written: SSE events, a long GET stream.
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_cache off;
            proxy_read_timeout 3600s;
            proxy_send_timeout 3600s;
            add_header X-Replica $upstream_addr always;
        }}
    }}
}}
"""


# Round robin over the replicas; a request whose connection a replica refused goes to
# another (redispatch), and a replica failing its health check is left out meanwhile.
_HAPROXY_CONF: Final = """\
global
    maxconn 1024
    log stdout format raw local0 info
defaults
    mode http
    log global
    option httplog
    timeout connect 2s
    timeout client 1h
    timeout server 1h
    timeout http-request 30s
    retries 3
    option redispatch 1
    retry-on conn-failure empty-response
frontend mcp
    bind 127.0.0.1:{port}
    default_backend replicas
backend replicas
    balance roundrobin
    option httpchk
    http-check send meth GET uri {check} ver HTTP/1.1 hdr Host 127.0.0.1
    http-response set-header X-Replica %[srv_name]
{servers}
"""


def _tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[-_LOG_TAIL:]
    except OSError:
        return ""


def wait_until(
    ready: Callable[[], bool],
    what: str,
    log: Path | None = None,
    process: subprocess.Popen[bytes] | None = None,
) -> None:
    """Probe ``ready`` until it holds; fail after READY_TIMEOUT seconds or if ``process`` exits."""
    deadline = time.monotonic() + READY_TIMEOUT
    while not ready():
        tail = f"\n{_tail(log)}" if log is not None else ""
        if process is not None and process.poll() is not None:
            pytest.fail(f"{what} exited with {process.returncode}{tail}")
        if time.monotonic() > deadline:
            pytest.fail(f"{what} was not ready within {READY_TIMEOUT} s{tail}")
        time.sleep(_PROBE_PAUSE)


def _healthy(port: int, path: str = "/healthz") -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}{path}", timeout=1.0).status_code == 200
    except httpx.TransportError:
        return False


def _pong(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as probe:
            probe.sendall(b"PING\r\n")
            return probe.recv(64).startswith(b"+PONG")
    except OSError:
        return False


@attrs.define
class Replica:
    """One ``mcpactor serve`` process of the deployment."""

    port: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        """The replica's process id (what its tools answer)."""
        return self.process.pid

    @property
    def address(self) -> str:
        """host:port, as nginx names it in ``X-Replica``."""
        return f"127.0.0.1:{self.port}"


@attrs.define
class Deployment:
    """Redis, three replicas and a load balancer (nginx or HAProxy) in front of them."""

    directory: Path
    redis_port: int
    redis: subprocess.Popen[bytes]
    replicas: list[Replica]
    nginx_port: int
    nginx: subprocess.Popen[bytes]
    #: where ``slow`` notes its starts and ends
    events: Path
    #: which balancer runs (``nginx_port`` and ``nginx`` are its port and process)
    balancer: str = "nginx"
    #: each replica's command, to start it again (``restart``)
    commands: list[list[str]] = attrs.Factory(list)
    #: what stops the processes when the deployment ends
    stack: ExitStack | None = None
    #: how many times each replica was started again
    restarts: list[int] = attrs.Factory(list)

    @property
    def url(self) -> str:
        """The MCP endpoint, through the load balancer."""
        return f"http://127.0.0.1:{self.nginx_port}/mcp"

    def replica_url(self, index: int) -> str:
        """The MCP endpoint of one replica, straight to its port."""
        return f"http://{self.replicas[index].address}/mcp"

    def replica_at(self, address: str) -> int:
        """The index of the replica nginx names ``address`` (its ``X-Replica``)."""
        # After a failed attempt nginx lists every address it tried: the last answered.
        last = address.split(",")[-1].strip()
        for index, replica in enumerate(self.replicas):
            if replica.address == last:
                return index
        raise AssertionError(f"no replica at {address!r}")

    def replica_of_pid(self, pid: int) -> int:
        """The index of the replica whose process id is ``pid``."""
        return [replica.pid for replica in self.replicas].index(pid)

    def noted(self) -> list[str]:
        """The lines ``slow`` has noted so far, in order."""
        try:
            return self.events.read_text().splitlines()
        except FileNotFoundError:
            return []

    def wait_noted(self, start: str, count: int = 1) -> list[str]:
        """Wait (READY_TIMEOUT at most) for ``count`` notes that begin ``start``; return them."""

        def found() -> list[str]:
            return [line for line in self.noted() if line.startswith(start)]

        wait_until(lambda: len(found()) >= count, f"{count} notes {start!r}...")
        return found()

    def access_log(self) -> list[str]:
        """nginx's access log: ``METHOD UPSTREAM STATUS`` per request answered."""
        return _tail(self.directory / "nginx" / "access.log").splitlines()

    def logs(self) -> str:
        """Every replica's log (the end of each), for failure messages."""
        return "\n".join(f"--- replica {r.address}\n{_tail(r.log)}" for r in self.replicas)

    def kill(self, index: int) -> None:
        """SIGKILL one replica and reap it."""
        self.replicas[index].process.kill()
        self.replicas[index].process.wait(timeout=READY_TIMEOUT)

    def terminate(self, index: int) -> int:
        """SIGTERM one replica (a graceful stop), wait for it to exit; its exit status."""
        process = self.replicas[index].process
        process.terminate()
        return process.wait(timeout=READY_TIMEOUT)

    def restart(self, index: int) -> None:
        """Restart one replica as a rolling deploy does, and wait until it serves again.

        SIGTERM (it drains), its exit (status 0) awaited, the same command started on
        the same port, its ``/readyz`` awaited, then a request through the balancer
        answered by it: the balancer has it back.
        """
        assert self.stack is not None
        status = self.terminate(index)
        assert status == 0, f"replica {index} exited with {status}\n{self.logs()}"
        self.restarts[index] += 1
        old = self.replicas[index]
        log = self.directory / f"replica-{index}.{self.restarts[index]}.log"
        process = _spawn(self.commands[index], log, self.stack)
        replica = self.replicas[index] = Replica(port=old.port, process=process, log=log)
        wait_until(
            functools.partial(_healthy, replica.port, "/readyz"),
            f"the restarted replica on {replica.address}",
            log,
            process,
        )
        wait_until(
            functools.partial(self._through_balancer, replica.address),
            f"the balancer sending requests to {replica.address} again",
            log,
            process,
        )

    def _through_balancer(self, address: str) -> bool:
        # One probe through the balancer: True if ``address`` answered it.
        try:
            answer = httpx.get(f"http://127.0.0.1:{self.nginx_port}/healthz", timeout=1.0)
        except httpx.TransportError:
            return False
        return answer.headers.get("x-replica", "").split(",")[-1].strip() == address

    def pause_redis(self) -> None:
        """Stop redis where it is (SIGSTOP): connections stay open and nothing answers."""
        self.redis.send_signal(signal.SIGSTOP)

    def resume_redis(self) -> None:
        """Let a paused redis go on (SIGCONT)."""
        self.redis.send_signal(signal.SIGCONT)

    def stop_redis(self) -> None:
        """Terminate redis: what it held is gone and connections are refused."""
        _stop(self.redis)

    def start_redis(self) -> None:
        """Start an empty redis again on the same port, and wait until it answers."""
        self.redis = _start_redis(self.directory, self.redis_port)

    def alive(self) -> list[bool]:
        """Whether each replica's process still runs."""
        return [replica.process.poll() is None for replica in self.replicas]


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGCONT)  # a paused redis cannot act on SIGTERM
        process.terminate()
        try:
            process.wait(timeout=READY_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _spawn(arguments: list[str], log: Path, stack: ExitStack) -> subprocess.Popen[bytes]:
    output: IO[bytes] = stack.enter_context(log.open("wb"))
    process = subprocess.Popen(
        arguments,
        stdin=subprocess.DEVNULL,
        stdout=output,
        stderr=subprocess.STDOUT,
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    stack.callback(_stop, process)
    return process


def _haproxy_conf(port: int, replicas: list[Replica], check: str = "/healthz") -> str:
    # Each server is named by its address: what X-Replica says, as with nginx.
    servers = "\n".join(
        f"    server {replica.address} {replica.address} check inter 500ms fall 1 rise 1"
        for replica in replicas
    )
    return _HAPROXY_CONF.format(port=port, servers=servers, check=check)


def _nginx_conf(prefix: Path, port: int, replicas: list[Replica]) -> str:
    # fail_timeout: a replica that refused a connection is left out that long, then tried.
    servers = "\n".join(
        f"        server {replica.address} max_fails=1 fail_timeout=2s;" for replica in replicas
    )
    # As root, nginx's workers would run as nobody, who cannot enter the test's directory.
    user = "user root;" if os.geteuid() == 0 else ""
    return _NGINX_CONF.format(prefix=prefix, port=port, servers=servers, user=user)


def _start_redis(directory: Path, port: int) -> subprocess.Popen[bytes]:
    assert REDIS is not None
    with (directory / "redis.log").open("ab") as log:
        redis = subprocess.Popen(
            [
                *(REDIS, "--port", str(port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no", "--dir", str(directory / "redis")),
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_until(functools.partial(_pong, port), "redis-server", directory / "redis.log", redis)
    except BaseException:
        _stop(redis)
        raise
    return redis


@contextmanager
def deployment(
    directory: Path,
    *,
    count: int = 3,
    balancer: str = "nginx",
    arguments: tuple[str, ...] = (),
    check: str = "/healthz",
) -> Iterator[Deployment]:
    """Run redis, ``count`` replicas and a balancer until the block ends.

    ``balancer`` is ``"nginx"`` or ``"haproxy"``; each replica's command ends with
    ``arguments`` (``--max-sessions 2``, say). HAProxy's health check asks ``check``
    (``/readyz``: a draining replica is taken out).
    """
    if REDIS is None:
        pytest.skip("redis-server is not installed (CI installs Debian's redis-server)")
    if balancer == "nginx" and NGINX is None:
        pytest.skip("nginx is not installed (CI installs Debian's nginx)")
    if balancer == "haproxy" and HAPROXY is None:
        pytest.skip("haproxy is not installed (CI installs Debian's haproxy)")
    with ExitStack() as stack:
        redis_port = free_port()
        (directory / "redis").mkdir()
        holder: list[Deployment] = []
        redis = _start_redis(directory, redis_port)
        # The redis running at the end, which a test may have restarted.
        stack.callback(lambda: _stop(holder[0].redis if holder else redis))

        keys = directory / "state.keys"
        keys.write_text(base64.b64encode(os.urandom(32)).decode() + "\n")
        events = directory / "events.log"
        os.environ["MCPACTOR_REPLICA_LOG"] = str(events)
        stack.callback(os.environ.pop, "MCPACTOR_REPLICA_LOG", None)
        replicas = []
        commands = []
        for number in range(count):
            port = free_port()
            log = directory / f"replica-{number}.log"
            command = [
                *(sys.executable, "-m", "mcpactor", "serve", str(SERVER)),
                *("--http", f"127.0.0.1:{port}"),
                *("--store", f"redis://127.0.0.1:{redis_port}"),
                *("--state-key-file", str(keys)),
                *arguments,
            ]
            commands.append(command)
            process = _spawn(command, log, stack)
            replicas.append(Replica(port=port, process=process, log=log))
        for replica in replicas:
            wait_until(
                functools.partial(_healthy, replica.port),
                f"the replica on {replica.address}",
                replica.log,
                replica.process,
            )

        prefix = directory / balancer
        prefix.mkdir()
        nginx_port = free_port()
        if balancer == "haproxy":
            conf = prefix / "haproxy.cfg"
            conf.write_text(_haproxy_conf(nginx_port, replicas, check))
            assert HAPROXY is not None
            command = [HAPROXY, "-db", "-f", str(conf)]
        else:
            conf = prefix / "nginx.conf"
            conf.write_text(_nginx_conf(prefix, nginx_port, replicas))
            assert NGINX is not None
            command = [NGINX, "-p", str(prefix), "-c", str(conf), "-g", "daemon off;"]
        log = directory / f"{balancer}.log"
        nginx = _spawn(command, log, stack)
        wait_until(functools.partial(_healthy, nginx_port), balancer, log, nginx)
        running = Deployment(
            directory=directory,
            redis_port=redis_port,
            redis=redis,
            replicas=replicas,
            nginx_port=nginx_port,
            nginx=nginx,
            events=events,
            balancer=balancer,
            commands=commands,
            stack=stack,
            restarts=[0] * count,
        )
        holder.append(running)
        yield running


# --- a raw Streamable HTTP client, for what the SDK's client does not let a test do ------

SESSION_REVISION: Final = "2025-11-25"
STATELESS_REVISION: Final = "2026-07-28"
ACCEPT: Final = {"accept": "application/json, text/event-stream"}
#: the largest SSE line a test reads (the replicas' messages are small)
MAX_LINE: Final = 1 << 20

JSON = dict[str, Any]


@attrs.define
class Answer:
    """What one POST brought back: the replica that answered, its status and messages."""

    status: int
    replica: str
    messages: list[JSON]
    session: str | None

    def response(self, request_id: int) -> JSON:
        """The JSON-RPC response to ``request_id`` among the messages."""
        for message in self.messages:
            if message.get("id") == request_id and ("result" in message or "error" in message):
                return message
        raise AssertionError(f"no response to {request_id} in {self.messages!r}")


async def sse_events(response: httpx.Response) -> AsyncIterator[tuple[str | None, JSON]]:
    """The ``(id, message)`` of each SSE event of ``response`` that carries a message."""
    event_id: str | None = None
    data: list[str] = []
    # Closed at once, even when the caller stops early (a generator left to the GC warns).
    async with contextlib.aclosing(response.aiter_lines()) as lines:
        async for line in lines:
            assert len(line) <= MAX_LINE, "an SSE line longer than any message sent"
            if not line:
                # A priming event (an id, empty data) carries no message.
                if "".join(data).strip():
                    yield event_id, orjson.loads("\n".join(data))
                event_id, data = None, []
            elif line.startswith("id:"):
                event_id = line[3:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip())


def request(request_id: int, method: str, params: JSON | None = None) -> JSON:
    """A JSON-RPC request."""
    message: JSON = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


async def post(
    http: httpx.AsyncClient, url: str, message: JSON, *, session: str | None = None
) -> Answer:
    """POST ``message`` (session era) and read the answer whole, JSON or SSE."""
    headers = {**ACCEPT, "content-type": "application/json"}
    if session is not None:
        headers |= {"mcp-session-id": session, "mcp-protocol-version": SESSION_REVISION}
    async with http.stream("POST", url, content=orjson.dumps(message), headers=headers) as got:
        messages: list[JSON] = []
        if got.headers.get("content-type", "").startswith("text/event-stream"):
            async with contextlib.aclosing(sse_events(got)) as events:
                async for _, item in events:
                    messages.append(item)
                    if item.get("id") == message.get("id") and "method" not in item:
                        break
        else:
            body = await got.aread()
            if body:
                decoded = orjson.loads(body[:MAX_LINE])
                messages = decoded if isinstance(decoded, list) else [decoded]
        return Answer(
            status=got.status_code,
            replica=got.headers.get("x-replica", ""),
            messages=messages,
            session=got.headers.get("mcp-session-id"),
        )


async def open_session(http: httpx.AsyncClient, url: str, capabilities: JSON | None = None) -> str:
    """Open a 2025-11-25 session through ``url`` and return its id."""
    params = {
        "protocolVersion": SESSION_REVISION,
        "capabilities": capabilities or {},
        "clientInfo": {"name": "replica-tests", "version": "1.0"},
    }
    answer = await post(http, url, request(0, "initialize", params))
    assert answer.status == 200, answer
    assert answer.session is not None, answer
    assert "result" in answer.response(0), answer
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    sent = await http.post(
        url,
        content=orjson.dumps(done),
        headers={
            **ACCEPT,
            "content-type": "application/json",
            "mcp-session-id": answer.session,
            "mcp-protocol-version": SESSION_REVISION,
        },
    )
    assert sent.status_code == 202, sent.text
    return answer.session


async def stateless_call(
    http: httpx.AsyncClient, url: str, request_id: int, name: str, arguments: JSON
) -> httpx.Response:
    """A 2026-07-28 ``tools/call`` (no session), answered whole."""
    message = request(
        request_id,
        "tools/call",
        {
            "name": name,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": STATELESS_REVISION,
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    )
    return await http.post(
        url,
        content=orjson.dumps(message),
        headers={
            **ACCEPT,
            "content-type": "application/json",
            "mcp-protocol-version": STATELESS_REVISION,
            "mcp-method": "tools/call",
            "mcp-name": name,
        },
    )


def tool_text(result: JSON) -> str:
    """The text of a tool result's first content block."""
    text = result["content"][0]["text"]
    assert isinstance(text, str)
    return text
