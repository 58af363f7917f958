"""Each extra as a user installs it: the built wheels alone in a new venv, per combination.

    python .ci/release_extras.py DIST WORK

DIST holds the wheels ``.ci/release-check`` built (mcpactor's and the plugins'); WORK is
an empty directory this may fill. Every combination the docs tell users to install, and
every extra on its own, gets a venv of its own with that and the clock plugin only, and
runs there what the page of the docs that names it runs: ``mcpactor serve --http`` and a
tools/call for ``[http]``, ``serve --admin`` and its page for ``[admin]``, ``serve
--store`` with a real redis-server for ``[redis]``, and so on. The base install serves
over stdio, and every option that needs an extra it lacks says in one line which one to
install; so does ``[http]`` for the options of the other extras.

Fast enough for CI: the dependencies are resolved once, into a wheelhouse (``pip wheel``,
with pip's cache); each venv is made without pip and filled from the wheelhouse alone
(``--no-index``) by this interpreter's pip; two combinations run at a time. Standard
library only: it runs under whatever Python runs the release check.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import queue
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import tomllib
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

#: seconds anything a case waits for may take; only a hang trips it
TIMEOUT: Final = 60.0
#: the extras a server uses (not the developer's test, docs and dev)
NOT_RUNTIME: Final = frozenset({"test", "docs", "dev"})

SERVER: Final = """\
from mcpactor import Server

server = Server("adder", version="1.0.0")


@server.tool()
def add(a: int, b: int) -> int:
    return a + b
"""

SECOND_TOOL: Final = """

@server.tool()
def mul(a: int, b: int) -> int:
    return a * b
"""

# What a user runs that a missing extra stops: (the command line, the extra it needs).
HTTP_OPTIONS: Final = [
    (["serve", "--http", "127.0.0.1:0", "clock"], "http"),
    (["serve", "--http", "127.0.0.1:0", "--http-server", "hypercorn", "clock"], "http"),
    (["serve", "http://127.0.0.1:9/mcp"], "http"),
    (["inspect", "http://127.0.0.1:9/mcp"], "http"),
    (["call", "--url", "http://127.0.0.1:9/mcp", "--list"], "http"),
]
OTHER_OPTIONS: Final = [
    (["serve", "--admin", "127.0.0.1:0", "clock"], "admin"),
    (["serve", "--otel", "clock"], "otel"),
    (["dev", "--stdio", "clock"], "dev-loop"),
    (["serve", "openapi:api.yaml", "--openapi-base-url", "http://127.0.0.1:9"], "openapi"),
]
OVER_HTTP_OPTIONS: Final = [
    (["serve", "--http", "127.0.0.1:0", "--store", "redis://127.0.0.1:9", "clock"], "redis"),
    (
        [
            "serve", "--http", "127.0.0.1:0", "--auth-issuer", "https://id.example.com",
            "--auth-resource", "https://mcp.example.com/mcp", "clock",
        ],
        "auth",
    ),
    (["serve", "--http", "127.0.0.1:0", "--admin", "127.0.0.1:0", "clock"], "admin"),
    (["serve", "--http", "127.0.0.1:0", "--otel", "clock"], "otel"),
    (["dev", "clock", "--http", "127.0.0.1:0"], "dev-loop"),
]  # fmt: skip


class Failed(Exception):
    """A case did not do what its page says."""


@dataclass
class Venv:
    """One combination installed: where, and the log of what was run there."""

    root: Path
    work: Path
    log: list[str]

    def bin(self, name: str) -> str:
        return str(self.root / "bin" / name)

    def note(self, text: str) -> None:
        self.log.append(text)

    def run(self, *arguments: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run the venv's ``mcpactor ARGUMENTS`` to its end, stdin closed."""
        done = subprocess.run(
            [self.bin("mcpactor"), *arguments],
            cwd=self.work,
            env=_clean_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        self.note(f"$ mcpactor {' '.join(arguments)}  -> {done.returncode}\n{done.stderr}")
        if check and done.returncode != 0:
            raise Failed(f"mcpactor {' '.join(arguments)} exited with {done.returncode}")
        return done

    def call(self, url: str, tool: str, arguments: dict[str, Any], *headers: str) -> Any:
        """What ``tool`` returns, called with the venv's ``mcpactor call --url``."""
        options = [f"--header={header}" for header in headers]
        done = self.run("call", "--url", url, *options, "--tool", tool, "--args",
                        json.dumps(arguments))  # fmt: skip
        result = json.loads(done.stdout)
        if result.get("isError"):
            raise Failed(f"{tool} failed: {result}")
        return result["structuredContent"]["result"]

    def says_which_extra(self, arguments: list[str], extra: str) -> None:
        """``mcpactor ARGUMENTS`` stops at once with one line naming ``extra``."""
        done = self.run(*arguments, check=False)
        lines = done.stderr.splitlines()
        wanted = f"pip install 'mcpactor[{extra}]'"
        if done.returncode != 1 or len(lines) != 1 or not lines[0].endswith(wanted):
            raise Failed(
                f"mcpactor {' '.join(arguments)}: expected status 1 and one line ending "
                f"{wanted!r}, got {done.returncode}:\n{done.stderr}"
            )

    @contextmanager
    def serving(self, *arguments: str, marker: str = "serving http") -> Iterator[Running]:
        """Run ``mcpactor ARGUMENTS`` until the block ends; wait for a line with ``marker``."""
        process = subprocess.Popen(
            [self.bin("mcpactor"), *arguments],
            cwd=self.work,
            env=_clean_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        running = Running(process, self)
        self.note(f"$ mcpactor {' '.join(arguments)} &")
        try:
            running.wait_for(marker)
            yield running
        finally:
            assert process.stdin is not None
            process.stdin.close()
            process.terminate()
            try:
                process.wait(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            running.reader.join(timeout=TIMEOUT)
            self.note("\n".join(running.seen))


class Running:
    """A process started by ``Venv.serving``, its stderr read line by line."""

    def __init__(self, process: subprocess.Popen[str], venv: Venv) -> None:
        self.process = process
        self.seen: list[str] = []
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def wait_for(self, marker: str) -> str:
        """The first line from now on that holds ``marker``."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise Failed(f"no line with {marker!r} in {TIMEOUT:g} s") from None
            if line is None:
                raise Failed(f"the process ended (status {self.process.wait()}) before "
                             f"{marker!r}:\n" + "\n".join(self.seen))  # fmt: skip
            self.seen.append(line)
            if marker in line:
                return line

    def url_after(self, marker: str) -> str:
        """The URL right after ``marker`` in the first line, seen or to come, holding both."""
        pattern = re.compile(re.escape(marker) + r"(https?://\S+)")
        line = next((seen for seen in self.seen if pattern.search(seen)), None)
        if line is None:
            line = self.wait_for(marker + "http")
        found = pattern.search(line)
        if found is None:
            raise Failed(f"no URL after {marker!r} in {line!r}")
        return found.group(1)


def _clean_env() -> dict[str, str]:
    # Nothing of the checkout: no PYTHONPATH, no venv of the caller on the way.
    return {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}


def _fetch(url: str, token: str) -> tuple[int, str, str]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
        return response.status, response.headers.get("content-type", ""), response.read().decode()


# --- the cases: what each page runs ----------------------------------------------------------


def base(venv: Venv) -> None:
    """``pip install mcpactor``: stdio; every option of an extra names the extra."""
    result = venv.run("call", "--tool", "now", "--", venv.bin("mcpactor"), "serve", "clock")
    if "unix" not in json.loads(result.stdout)["structuredContent"]:
        raise Failed(f"the clock's now: {result.stdout}")
    for arguments, extra in [*HTTP_OPTIONS, *OTHER_OPTIONS, *OVER_HTTP_OPTIONS]:
        venv.says_which_extra(arguments, "http" if arguments in _over_http() else extra)


def _over_http() -> list[list[str]]:
    # Over HTTP, the http extra is missing first: it is the one named.
    return [arguments for arguments, _ in OVER_HTTP_OPTIONS if arguments[0] == "serve"]


def http(venv: Venv) -> None:
    """docs/http.md: serve --http, a tools/call; every other extra's option names it."""
    with venv.serving("serve", "--http", "127.0.0.1:0", "adder.py") as server:
        if venv.call(server.url_after("serving "), "add", {"a": 2, "b": 3}) != 5:
            raise Failed("add(2, 3) is not 5")
    for arguments, extra in [*OTHER_OPTIONS, *OVER_HTTP_OPTIONS]:
        venv.says_which_extra(arguments, extra)


def dev_loop(venv: Venv) -> None:
    """docs/dev-loop.md: mcpactor dev serves over HTTP and restarts on a save."""
    source = venv.work / "adder.py"
    with venv.serving("dev", "adder.py", "--http", "127.0.0.1:0") as dev:
        url = dev.url_after("serving ")
        if venv.call(url, "add", {"a": 2, "b": 3}) != 5:
            raise Failed("add(2, 3) is not 5")
        saved = source.with_name(".adder.py.swp")
        saved.write_text(SERVER + SECOND_TOOL)
        saved.replace(source)
        dev.wait_for("changed; restarting")
        if venv.call(url, "mul", {"a": 2, "b": 3}) != 6:
            raise Failed("after the save, mul(2, 3) is not 6")


def auth(venv: Venv) -> None:
    """docs/authorization.md: serve with --auth-*; no token is 401, a good one is served."""
    # The issuer's key, its JWKS and a token, made with the venv's own cryptography (a
    # dependency of mcpactor) so that nothing of this interpreter's is needed.
    made = subprocess.run(
        [venv.bin("python"), "-c", MINT],
        cwd=venv.work,
        env=_clean_env(),
        capture_output=True,
        text=True,
        check=True,
        timeout=TIMEOUT,
    )
    token = made.stdout.strip()
    with venv.serving(
        "serve", "adder.py", "--http", "127.0.0.1:0",
        "--auth-issuer", "https://id.example.com",
        "--auth-resource", "https://mcp.example.com/mcp",
        "--auth-jwks-file", "jwks.json",
    ) as server:  # fmt: skip
        url = server.url_after("serving ")
        refused = venv.run("call", "--url", url, "--list", check=False)
        if refused.returncode == 0 or "401" not in refused.stderr:
            raise Failed(f"without a token: {refused.returncode} {refused.stderr}")
        if venv.call(url, "add", {"a": 2, "b": 3}, f"Authorization: Bearer {token}") != 5:
            raise Failed("add(2, 3) with a token is not 5")


MINT: Final = r"""
import base64, json, time
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

def number(n):
    return b64(n.to_bytes((n.bit_length() + 7) // 8, "big"))

key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
public = key.public_key().public_numbers()
jwk = {"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256",
       "n": number(public.n), "e": number(public.e)}
with open("jwks.json", "w") as file:
    json.dump({"keys": [jwk]}, file)
now = int(time.time())
header = {"alg": "RS256", "typ": "at+jwt", "kid": "k1"}
claims = {"iss": "https://id.example.com", "aud": "https://mcp.example.com/mcp",
          "sub": "release-check", "client_id": "release-check", "iat": now,
          "exp": now + 600, "jti": "1"}
signing = (b64(json.dumps(header).encode()) + "." + b64(json.dumps(claims).encode())).encode()
signature = key.sign(signing, padding.PKCS1v15(), hashes.SHA256())
print(signing.decode() + "." + b64(signature))
"""


def admin(venv: Venv) -> None:
    """docs/operations.md: serve --admin (over stdio here); the page and /metrics."""
    with venv.serving("serve", "--admin", "127.0.0.1:0", "clock", marker="admin page ") as s:
        _check_admin_page(s.seen)


def http_admin(venv: Venv) -> None:
    """docs/operations.md: serve --http with --admin; the page, /metrics and a call."""
    arguments = ("serve", "--http", "127.0.0.1:0", "--admin", "127.0.0.1:0", "adder.py")
    with venv.serving(*arguments, marker="admin page ") as server:
        _check_admin_page(server.seen)
        if venv.call(server.url_after("serving "), "add", {"a": 2, "b": 3}) != 5:
            raise Failed("add(2, 3) is not 5")


def _check_admin_page(seen: list[str]) -> None:
    (line,) = (line for line in seen if "admin page " in line)
    url = line.split("admin page ", 1)[1].split()[0]
    token = line.split("(token: ", 1)[1].split(")")[0]
    status, kind, page = _fetch(url, token)
    if status != 200 or not kind.startswith("text/html") or "<html" not in page.lower():
        raise Failed(f"the admin page: {status} {kind}")
    status, kind, metrics = _fetch(url + "metrics", token)
    if status != 200 or "mcpactor_" not in metrics:
        raise Failed(f"/metrics: {status} {kind}")


def redis(venv: Venv) -> None:
    """docs/deployment.md: --workers with --store against a real redis-server."""
    with _redis_server(venv.work) as port:
        store = f"redis://127.0.0.1:{port}/0"
        arguments = ("serve", "adder.py", "--http", "127.0.0.1:0", "--workers", "2")
        with venv.serving(*arguments, "--store", store) as server:
            if venv.call(server.url_after("serving "), "add", {"a": 2, "b": 3}) != 5:
                raise Failed("add(2, 3) is not 5")


@contextmanager
def _redis_server(directory: Path) -> Iterator[int]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise Failed("the redis case needs redis-server (CI installs Debian's redis-server)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
         "no", "--dir", str(directory)],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise Failed(f"redis-server did not start on port {port}") from None
                time.sleep(0.05)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=TIMEOUT)


def otel(venv: Venv) -> None:
    """docs/operations.md: serve --otel (over stdio here) traces the requests it serves."""
    served = [venv.bin("mcpactor"), "--log-level", "info", "serve", "--otel", "adder.py"]
    done = venv.run("call", "--tool", "add", "--args", '{"a": 2, "b": 3}', "--", *served)
    if json.loads(done.stdout)["structuredContent"]["result"] != 5:
        raise Failed("add(2, 3) is not 5")
    if "tracing requests" not in done.stderr:
        raise Failed("the server did not say it traces requests")


def http_otel(venv: Venv) -> None:
    """docs/operations.md: serve --otel --http."""
    arguments = ("--log-level", "info", "serve", "--otel", "--http", "127.0.0.1:0", "adder.py")
    with venv.serving(*arguments) as server:
        if venv.call(server.url_after("serving "), "add", {"a": 2, "b": 3}) != 5:
            raise Failed("add(2, 3) is not 5")
        if not any("tracing requests" in line for line in server.seen):
            raise Failed("the server did not say it traces requests")


OPENAPI_DOCUMENT: Final = """
openapi: 3.1.0
info: {title: files, version: "1"}
paths:
  /data.json:
    get:
      operationId: data
      responses:
        "200":
          description: the file
          content:
            application/json:
              schema: {type: object}
"""


def openapi(venv: Venv) -> None:
    """docs/openapi.md: serve a YAML document's operation; the API is a loopback server."""
    (venv.work / "api.yaml").write_text(OPENAPI_DOCUMENT)
    (venv.work / "data.json").write_text('{"answer": 42}')
    files = subprocess.Popen(
        [venv.bin("python"), "-u", "-m", "http.server", "0", "--bind", "127.0.0.1"],
        cwd=venv.work,
        env=_clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert files.stdout is not None
        found = re.search(r"port (\d+)", files.stdout.readline())
        if found is None:
            raise Failed("python -m http.server did not say its port")
        url = f"http://127.0.0.1:{found.group(1)}"
        done = venv.run(
            "call", "--tool", "data", "--", venv.bin("mcpactor"), "serve", "openapi:api.yaml",
            "--openapi-base-url", url,
        )  # fmt: skip
        if json.loads(done.stdout)["structuredContent"] != {"answer": 42}:
            raise Failed(f"the data operation: {done.stdout}")
    finally:
        files.terminate()
        files.wait(timeout=TIMEOUT)


#: every combination checked: the requirement installed, and what is run with it
CASES: Final[dict[str, Callable[[Venv], None]]] = {
    "mcpactor": base,
    "mcpactor[http]": http,
    "mcpactor[dev-loop]": dev_loop,
    "mcpactor[auth]": auth,
    "mcpactor[admin]": admin,
    "mcpactor[http,admin]": http_admin,
    "mcpactor[redis]": redis,
    "mcpactor[otel]": otel,
    "mcpactor[http,otel]": http_otel,
    "mcpactor[openapi]": openapi,
}


# --- installing --------------------------------------------------------------------------------


def wheelhouse(dist: Path, house: Path, extras: list[str]) -> None:
    """Every wheel any case installs, in ``house``: one resolution for all of them."""
    (mcpactor,) = dist.glob("mcpactor-*.whl")
    (clock,) = dist.glob("mcpactor_clock-*.whl")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check",
         "--wheel-dir", str(house), f"{mcpactor}[{','.join(extras)}]", str(clock)],
        check=True,
    )  # fmt: skip


def install(requirement: str, house: Path, root: Path) -> Venv:
    """A new venv at ``root`` with ``requirement`` and the clock plugin, from ``house``."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(root / "bin" / "python"), "install",
         "-q", "--disable-pip-version-check", "--no-index", "--find-links", str(house),
         # what is imported is compiled when it is first run, not every file up front
         "--no-compile",
         requirement, "mcpactor-clock"],
        check=True,
        capture_output=True,
        text=True,
    )  # fmt: skip
    work = root.with_name(root.name + "-cwd")
    work.mkdir()
    (work / "adder.py").write_text(SERVER)
    return Venv(root, work, [])


def check(requirement: str, house: Path, work: Path) -> tuple[str, str, str | None]:
    """Install ``requirement`` alone and run its case: (requirement, timing, failure)."""
    started = time.monotonic()
    name = re.sub(r"\W+", "-", requirement).strip("-")
    try:
        venv = install(requirement, house, work / name)
    except subprocess.CalledProcessError as exc:
        return requirement, "", f"cannot install:\n{exc.stderr}"
    installed = time.monotonic()
    try:
        CASES[requirement](venv)
    except (Failed, subprocess.SubprocessError, OSError, KeyError, ValueError) as exc:
        log = "\n".join(venv.log[-12:])
        return requirement, "", f"{exc}\n--- the last steps:\n{log}"
    said = f"installed in {installed - started:.1f} s, ran in {time.monotonic() - installed:.1f} s"
    return requirement, said, None


def runtime_extras(source: Path) -> list[str]:
    """The extras of ``source``'s pyproject.toml a server uses."""
    optional = tomllib.loads((source / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    return sorted(set(optional) - NOT_RUNTIME)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dist", type=Path)
    parser.add_argument("work", type=Path)
    parser.add_argument("--source", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args()
    extras = runtime_extras(args.source)
    missing = [e for e in extras if f"mcpactor[{e}]" not in CASES]
    if missing:
        print(f"release_extras: no case for the extras {missing}", file=sys.stderr)
        return 1
    started = time.monotonic()
    args.work.mkdir(parents=True, exist_ok=True)
    house = args.work / "wheelhouse"
    wheelhouse(args.dist.resolve(), house, extras)
    print(f"wheelhouse: {len(list(house.glob('*.whl')))} wheels in "
          f"{time.monotonic() - started:.1f} s")  # fmt: skip
    failures = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(check, r, house, args.work) for r in CASES]
        for future in concurrent.futures.as_completed(futures):
            requirement, timing, failure = future.result()
            print(f"{'ok' if failure is None else 'FAILED'}  {requirement}  {timing}")
            if failure is not None:
                failures += 1
                print(failure, file=sys.stderr)
    print(f"{len(CASES) - failures} of {len(CASES)} passed in {time.monotonic() - started:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
