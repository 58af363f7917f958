"""The optional extras: nothing imports an extra it does not need, and a missing one is named.

A base install (``pip install mcpactor``) serves over stdio; each extra adds what its
options need. Here that is checked three ways, cheaply, in the checkout's environment
(``.ci/release-check`` installs the built wheels, one combination per venv, and runs
what each page of the docs runs):

- statically: what each module imports when it is imported (not inside functions, not
  under ``TYPE_CHECKING``), followed through the package, reaches a package outside the
  base install only from the modules that exist for that extra;
- as a user without an extra: the command runs as a child whose interpreter cannot import
  the extras' modules (a ``sitecustomize`` puts them in ``sys.modules`` as ``None``,
  which the import system reads as "not installed"), and serves, or says in one line
  which extra to install;
- the table of ``mcpactor.cli._extras`` against ``pyproject.toml``.
"""

from __future__ import annotations

import ast
import base64
import fnmatch
import functools
import importlib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tomllib
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

import pytest
import trio
from packaging.requirements import Requirement

import mcpactor.cli._report
from mcpactor.cli._extras import EXTRAS, INCLUDED, ExtraMissing, modules_of, require
from mcpactor.client import connect_http
from tests.transports._cli import server_file

ROOT: Final = Path(__file__).resolve().parents[1]
PACKAGE: Final = ROOT / "mcpactor"
#: real processes on a loaded machine: generous, so only a hang trips it
GUARD: Final = 60.0

#: the packages a base install has: mcpactor's own dependencies
BASE: Final = frozenset(
    Requirement(text).name.replace("-", "_")
    for text in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
)
#: packages imported by name that come with an extra's distribution, not as its own
#: requirement: quart is quart-trio's base, and the admin app uses it directly
BROUGHT: Final = {"quart": "admin"}
#: packages the user brings for a helper that only runs under them
USERS_OWN: Final = {"pytest": "mcpactor.testing's fixtures run under the user's pytest"}
#: the modules that exist for an extra, and so may import its packages when imported
#: (``*`` is any rest of the name)
FOR_AN_EXTRA: Final = {
    "mcpactor.admin": "admin",
    "mcpactor.admin.*": "admin",
    "mcpactor.observability._prometheus": "admin",
    "mcpactor.auth._factory": "auth",
    "mcpactor.auth._introspection": "auth",
    "mcpactor.auth._jwks": "auth",
    "mcpactor.auth._jwt": "auth",
    "mcpactor.client._http11": "http",
    "mcpactor.transports._hypercorn_worker": "http",
    "mcpactor.transports.h1": "http",
    "mcpactor.transports.h1.*": "http",
    # the Redis store's modules; the package and its URL parser are read without coredis
    "mcpactor.store._[!u]*": "redis",
}

ALL_OPTIONAL: Final = frozenset({*(m for names in EXTRAS.values() for m in names), *BROUGHT})


# --- the table against pyproject.toml ------------------------------------------------------


def test_the_extras_table_is_pyprojects() -> None:
    optional = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    provided: dict[str, set[str]] = {}
    for module, distributions in _provided().items():
        for distribution in distributions:
            provided.setdefault(distribution, set()).add(module)
    for extra in EXTRAS:
        requirements = [Requirement(text) for text in optional[extra]]
        own = [r for r in requirements if r.name != "mcpactor"]
        modules = {m for r in own for m in provided[_normal(r.name)] if not m.startswith("_")}
        assert set(EXTRAS[extra]) == modules, extra
        included = sorted(e for r in requirements if r.name == "mcpactor" for e in r.extras)
        assert included == sorted(INCLUDED.get(extra, ())), extra
    runtime = set(optional) - {"test", "docs", "dev"}
    assert set(EXTRAS) == runtime
    # the dev extra installs every one
    (everything,) = (Requirement(t) for t in optional["dev"] if Requirement(t).name == "mcpactor")
    assert runtime <= everything.extras


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_an_extra_that_only_works_over_http_brings_it() -> None:
    # dev serves HTTP by default; authorization and a shared store are for HTTP only; the
    # admin page runs on the http extra's contained hypercorn worker
    assert {extra for extra in EXTRAS if "httptools" in modules_of(extra)} == {
        "http",
        "dev-loop",
        "auth",
        "admin",
        "redis",
        "openapi",
    }


# --- statically: what importing a module imports ----------------------------------------


@functools.cache
def _modules() -> dict[str, tuple[bool, ast.Module]]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        found[".".join(parts)] = (is_package, ast.parse(path.read_text(encoding="utf-8")))
    return found


def _run_at_import(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of ``body`` that run when the module is imported."""
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if isinstance(node, ast.If):
            test = node.test
            if not (
                (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
                or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
            ):
                yield from _run_at_import(node.body)
            yield from _run_at_import(node.orelse)
        elif isinstance(node, ast.Try):
            yield from _run_at_import(node.body)
            for handler in node.handlers:
                yield from _run_at_import(handler.body)
            yield from _run_at_import(node.orelse)
            yield from _run_at_import(node.finalbody)
        elif isinstance(node, ast.With | ast.For | ast.While | ast.ClassDef):
            yield from _run_at_import(node.body)
            yield from _run_at_import(getattr(node, "orelse", []))
        else:
            yield node


def _with_parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


@functools.cache
def _imported_at_import(name: str) -> frozenset[str]:
    """What importing ``name`` imports itself: the package's modules and others' names."""
    is_package, tree = _modules()[name]
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set(_with_parents(name)[:-1])
    for node in _run_at_import(tree.body):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            targets = [source, *(f"{source}.{alias.name}" for alias in node.names)]
        else:
            continue
        for target in targets:
            found.update(t for t in _with_parents(target) if t in _modules() or "." not in t)
    found.discard(name)
    return frozenset(found)


def _reaches(name: str) -> frozenset[str]:
    """The packages outside mcpactor that importing the module ``name`` imports."""
    seen: set[str] = set()
    outside: set[str] = set()
    stack = [name]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        for target in _imported_at_import(current):
            if target in _modules():
                stack.append(target)
            elif target.split(".")[0] not in {"mcpactor", "__future__"}:
                outside.add(target.split(".")[0])
    return frozenset(outside - set(sys.stdlib_module_names) - BASE)


def _extra_for(name: str) -> str | None:
    return next((e for p, e in FOR_AN_EXTRA.items() if fnmatch.fnmatchcase(name, p)), None)


def test_importing_a_module_imports_only_what_it_exists_for() -> None:
    wrong = []
    for name in _modules():
        extra = _extra_for(name)
        allowed: set[str] = set()
        if extra is not None:
            allowed = {*modules_of(extra), *(m for m, e in BROUGHT.items() if e == extra)}
        beyond = _reaches(name) - allowed
        if beyond:
            wrong.append(f"{name} imports {', '.join(sorted(beyond))} when it is imported")
    assert not wrong, "\n".join(wrong)


def test_every_module_for_an_extra_still_needs_it() -> None:
    for pattern, extra in FOR_AN_EXTRA.items():
        matched = [name for name in _modules() if fnmatch.fnmatchcase(name, pattern)]
        assert matched, f"{pattern} names no module"
        assert any(_reaches(name) for name in matched), f"{pattern} imports no {extra} package"


def test_the_static_check_sees_the_store_package_importing_coredis() -> None:
    # What it would have said of the store package importing its Redis classes eagerly,
    # which every `serve --http` loaded through the config reader.
    tree = ast.parse("from ._bus import RedisBus\nfrom ._url import parse_store_url\n")
    _modules()["mcpactor.store"] = (True, tree)
    _imported_at_import.cache_clear()
    try:
        assert "coredis" in _reaches("mcpactor.config._file")
    finally:
        _modules.cache_clear()
        _imported_at_import.cache_clear()
    assert "coredis" not in _reaches("mcpactor.config._file")


def test_every_package_outside_the_base_is_an_extras() -> None:
    # Anywhere in the package, inside functions too: each comes with an extra.
    outside = set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        # What only the type checker imports is the type checker's (typing_extensions).
        checking = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")
            for outer in node.body
            for inner in ast.walk(outer)
        }
        for node in ast.walk(tree):
            if id(node) in checking:
                continue
            if isinstance(node, ast.Import):
                outside.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                outside.add(node.module.split(".")[0])
    outside -= {*sys.stdlib_module_names, *BASE, "mcpactor"}
    assert outside <= ALL_OPTIONAL | set(USERS_OWN), sorted(outside - ALL_OPTIONAL)


# --- as a user without an extra -----------------------------------------------------------

SERVER: Final = """
from mcpactor import Server

server = Server("adder")


@server.tool()
def add(a: int, b: int) -> int:
    return a + b
"""

#: a sitecustomize that makes MODULES look uninstalled to the whole interpreter
HIDE: Final = """
import sys

for name in {modules!r}:
    sys.modules[name] = None
"""


def _hidden(installed: tuple[str, ...]) -> list[str]:
    """The extras' modules a user who installed only ``installed`` does not have."""
    return sorted(ALL_OPTIONAL - _installed_with(installed))


@functools.cache
def _installed_with(extras: tuple[str, ...]) -> frozenset[str]:
    # Every top-level module of the distributions the extras require, theirs included
    # (hypercorn brings h11, quart-trio brings quart), as pip would install them.
    optional = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    pending = [
        Requirement(text)
        for extra in extras
        for included in (extra, *INCLUDED.get(extra, ()))
        for text in optional[included]
    ]
    names: set[str] = set()
    while pending:
        requirement = pending.pop()
        name = _normal(requirement.name)
        if name == "mcpactor" or name in names:
            continue
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue
        names.add(name)
        pending.extend(
            Requirement(text) for text in importlib.metadata.distribution(name).requires or ()
        )
    return frozenset(m for m, dists in _provided().items() if names & set(dists))


@functools.cache
def _provided() -> dict[str, list[str]]:
    return {
        module: [_normal(d) for d in dists]
        for module, dists in importlib.metadata.packages_distributions().items()
    }


def _env(tmp_path: Path, installed: tuple[str, ...]) -> dict[str, str]:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(HIDE.format(modules=_hidden(installed)))
    env = dict(os.environ)
    # The workers of --workers and the child of dev start with it too.
    env["PYTHONPATH"] = os.pathsep.join([str(site), *sys.path])
    return env


async def test_a_hidden_module_is_not_installed_for_the_child(tmp_path: Path) -> None:
    env = _env(tmp_path, ("http",))
    with trio.fail_after(GUARD):
        probe = await trio.run_process(
            [sys.executable, "-c", "import coredis"], env=env, capture_stderr=True, check=False
        )
        kept = await trio.run_process([sys.executable, "-c", "import httptools"], env=env)
    assert probe.returncode == 1
    assert "ModuleNotFoundError" in probe.stderr.decode()
    assert kept.returncode == 0


class Lines:
    """The lines a child writes to stderr, read as they come."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self.stream = stream
        self.buffer = b""
        self.seen: list[str] = []

    async def until(self, marker: str) -> str:
        """Read up to the first line containing ``marker``; return that line."""
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                self.seen.append(line.decode())
                if marker in self.seen[-1]:
                    return self.seen[-1]
            chunk = await self.stream.receive_some(4096)
            assert chunk, f"the process ended before {marker!r}:\n" + "\n".join(self.seen)
            self.buffer += chunk


@asynccontextmanager
async def _running(
    tmp_path: Path, installed: tuple[str, ...], *arguments: str
) -> AsyncIterator[Lines]:
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "mcpactor", *arguments],
        cwd=tmp_path,
        env=_env(tmp_path, installed),
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    try:
        yield Lines(process.stderr)
    finally:
        process.terminate()
        with trio.move_on_after(GUARD):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()
        await process.stderr.aclose()
        if process.stdin is not None:
            await process.stdin.aclose()


async def _adds(url: str, headers: dict[str, str] | None = None) -> int:
    async with connect_http(url, initialize=True, headers=headers) as client:
        result = await client.call_tool("add", {"a": 2, "b": 3})
    return int(result["structuredContent"]["result"])


async def test_the_base_install_serves_over_stdio(tmp_path: Path) -> None:
    server_file(tmp_path, "adder.py", SERVER)
    mcpactor = [sys.executable, "-m", "mcpactor"]
    calling = ["call", "--tool", "add", "--args", '{"a": 2, "b": 3}']
    with trio.fail_after(GUARD):
        done = await trio.run_process(
            [*mcpactor, *calling, "--", *mcpactor, "serve", "adder.py"],
            cwd=tmp_path,
            env=_env(tmp_path, ()),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout)["structuredContent"] == {"result": 5}


@pytest.mark.parametrize("server", ["builtin", "hypercorn"])
async def test_the_http_extra_alone_serves_over_http(tmp_path: Path, server: str) -> None:
    # `serve --http` once imported the Redis store (coredis) with no --store given.
    server_file(tmp_path, "adder.py", SERVER)
    arguments = ("serve", "adder.py", "--http", "127.0.0.1:0", "--http-server", server)
    async with _running(tmp_path, ("http",), *arguments) as lines:
        with trio.fail_after(GUARD):
            line = await lines.until("serving ")
            assert await _adds(line.split("serving ", 1)[1].split()[0]) == 5


async def test_the_http_extra_alone_serves_several_workers(tmp_path: Path) -> None:
    server_file(tmp_path, "adder.py", SERVER)
    arguments = ("serve", "adder.py", "--http", "127.0.0.1:0", "--workers", "2", "--stateless")
    async with _running(tmp_path, ("http",), *arguments) as lines:
        with trio.fail_after(GUARD):
            line = await lines.until("serving ")
            assert await _adds(line.split("serving ", 1)[1].split()[0]) == 5


async def test_the_dev_loop_extra_alone_serves(tmp_path: Path) -> None:
    server_file(tmp_path, "adder.py", SERVER)
    async with _running(tmp_path, ("dev-loop",), "dev", "adder.py", "--http", "127.0.0.1:0") as (
        lines
    ):
        with trio.fail_after(GUARD):
            line = await lines.until("serving ")
            assert await _adds(line.split("serving ", 1)[1].split()[0]) == 5


async def test_the_admin_extra_alone_serves_the_page(tmp_path: Path) -> None:
    server_file(tmp_path, "adder.py", SERVER)
    async with _running(tmp_path, ("admin",), "serve", "adder.py", "--admin", "0") as lines:
        with trio.fail_after(GUARD):
            line = await lines.until("admin page ")
            url = line.split("admin page ", 1)[1].split()[0]
            token = line.split("(token: ", 1)[1].rstrip(")")
            request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
            page = await trio.to_thread.run_sync(_read, request)
    assert b"<html" in page.lower()


def _read(request: urllib.request.Request) -> bytes:
    with urllib.request.urlopen(request, timeout=GUARD) as response:
        body: bytes = response.read()
        return body


async def test_the_otel_extra_alone_traces_over_stdio(tmp_path: Path) -> None:
    server_file(tmp_path, "adder.py", SERVER)
    arguments = ("--log-level", "info", "serve", "adder.py", "--otel")
    async with _running(tmp_path, ("otel",), *arguments) as lines:
        with trio.fail_after(GUARD):
            await lines.until("tracing requests")


async def test_the_auth_extra_alone_guards_the_endpoint(tmp_path: Path) -> None:
    server_file(tmp_path, "adder.py", SERVER)
    (tmp_path / "jwks.json").write_text(json.dumps({"keys": [_public_jwk()]}))
    arguments = (
        "serve", "adder.py", "--http", "127.0.0.1:0",
        "--auth-issuer", "https://id.example.com",
        "--auth-resource", "https://mcp.example.com/mcp",
        "--auth-jwks-file", "jwks.json",
    )  # fmt: skip
    async with _running(tmp_path, ("auth",), *arguments) as lines:
        with trio.fail_after(GUARD):
            line = await lines.until("serving ")
            url = line.split("serving ", 1)[1].split()[0]
            request = urllib.request.Request(url, data=b"{}", method="POST")
            with pytest.raises(urllib.error.HTTPError) as refused:
                await trio.to_thread.run_sync(_read, request)
    with refused.value:  # its response, and the connection under it
        assert refused.value.code == 401
        assert refused.value.headers["www-authenticate"].startswith("Bearer ")


def _public_jwk() -> dict[str, str]:
    from cryptography.hazmat.primitives.asymmetric import rsa

    numbers = rsa.generate_private_key(65537, 2048).public_key().public_numbers()

    def b64(number: int) -> str:
        raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    return {"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256", "n": b64(numbers.n),
            "e": b64(numbers.e)}  # fmt: skip


CONFIG_STORE: Final = """
transport = "http"

[http]
port = 0

[store]
url = "redis://127.0.0.1:9"

[servers.adder]
target = "adder.py"
"""

CONFIG_ADMIN: Final = """
[admin]
listen = "127.0.0.1:0"

[servers.adder]
target = "adder.py"
"""

CONFIG_OTEL: Final = """
[observability]
otel = true

[servers.adder]
target = "adder.py"
"""

CONFIG_AUTH: Final = """
transport = "http"

[http]
port = 0

[auth]
issuers = ["https://id.example.com"]
resource = "https://mcp.example.com/mcp"

[servers.adder]
target = "adder.py"
"""

#: (what is installed, the command line, the extra it needs, the module said missing)
MISSING: Final = [
    ((), ["serve", "adder.py", "--http", "0"], "http", "httptools"),
    ((), ["serve", "adder.py", "--http", "0", "--http-server", "hypercorn"], "http", "hypercorn"),
    ((), ["serve", "https://mcp.example.com/mcp"], "http", "h11"),
    ((), ["inspect", "https://mcp.example.com/mcp"], "http", "h11"),
    ((), ["call", "--url", "http://127.0.0.1:9/mcp", "--list"], "http", "h11"),
    ((), ["serve", "adder.py", "--admin", "0"], "admin", "quart_trio"),
    ((), ["serve", "adder.py", "--otel"], "otel", "opentelemetry.trace"),
    ((), ["dev", "adder.py"], "dev-loop", "watchfiles"),
    ((), ["dev", "--stdio", "adder.py"], "dev-loop", "watchfiles"),
    (("otel",), ["dev", "--stdio", "adder.py", "--otel"], "dev-loop", "watchfiles"),
    (("http",), ["dev", "adder.py"], "dev-loop", "watchfiles"),
    (("http",), ["serve", "adder.py", "--http", "0", "--store", "redis://127.0.0.1:9"], "redis",
     "coredis"),
    (("http",), ["serve", "--config", "store.toml"], "redis", "coredis"),
    (("http",), ["serve", "adder.py", "--http", "0", "--auth-issuer", "https://id.example.com",
                 "--auth-resource", "https://mcp.example.com/mcp"], "auth", "joserfc"),
    (("http",), ["serve", "--config", "auth.toml"], "auth", "joserfc"),
    (("http",), ["serve", "adder.py", "--http", "0", "--admin", "0"], "admin", "quart_trio"),
    (("http",), ["serve", "--config", "admin.toml"], "admin", "quart_trio"),
    (("http",), ["serve", "adder.py", "--http", "0", "--otel"], "otel", "opentelemetry.trace"),
    (("http",), ["serve", "--config", "otel.toml"], "otel", "opentelemetry.trace"),
    (("dev-loop",), ["dev", "adder.py", "--store", "redis://127.0.0.1:9"], "redis", "coredis"),
    (("dev-loop",), ["dev", "adder.py", "--admin", "0"], "admin", "quart_trio"),
    (("redis", "auth"), ["serve", "adder.py", "--admin", "0"], "admin", "quart_trio"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("installed", "arguments", "extra", "module"),
    MISSING,
    ids=[f"{'+'.join(i) or 'base'}:{' '.join(a[:1] + a[2:])}" for i, a, _, _ in MISSING],
)
async def test_an_option_without_its_extra_is_one_line_naming_it(
    tmp_path: Path, installed: tuple[str, ...], arguments: list[str], extra: str, module: str
) -> None:
    server_file(tmp_path, "adder.py", SERVER)
    for name, text in [
        ("store.toml", CONFIG_STORE),
        ("admin.toml", CONFIG_ADMIN),
        ("otel.toml", CONFIG_OTEL),
        ("auth.toml", CONFIG_AUTH),
    ]:
        (tmp_path / name).write_text(text)
    with trio.fail_after(GUARD):
        done = await trio.run_process(
            [sys.executable, "-m", "mcpactor", *arguments],
            cwd=tmp_path,
            env=_env(tmp_path, installed),
            stdin=subprocess.DEVNULL,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    text = done.stderr.decode()
    assert done.returncode == 1, text
    (line,) = text.splitlines()
    assert line.startswith("mcpactor: ")
    assert line.endswith(
        f"needs the {extra} extra, which is not installed (no module named {module!r}): "
        f"pip install 'mcpactor[{extra}]'"
    )
    # Nothing was started before it: no "serving", nothing on stdout.
    assert done.stdout == b""


# --- what was not foreseen ------------------------------------------------------------------


def test_an_extras_module_mcpactor_imports_is_named_as_its_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The report's last resort, for a path no check before the start foresaw.
    monkeypatch.setitem(sys.modules, "coredis", None)
    monkeypatch.delitem(sys.modules, "mcpactor.store._bus", raising=False)
    with pytest.raises(ModuleNotFoundError) as raised:
        importlib.import_module("mcpactor.store._bus")
    status = mcpactor.cli._report.report(raised.value, debug=False, listen=None)
    assert status == 1
    assert capsys.readouterr().err == (
        "mcpactor: a shared store (--store) needs the redis extra, which is not installed "
        "(no module named 'coredis'): pip install 'mcpactor[redis]'\n"
        # unforeseen, so where it was imported may help
        "mcpactor: (--debug shows the traceback)\n"
    )


def test_a_users_own_import_is_not_taken_for_a_missing_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # A plugin importing httpx without it is the plugin's error, not the auth extra's.
    server_file(tmp_path, "needs_httpx.py", "import httpx\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(sys.modules, "httpx", None)
    with pytest.raises(ModuleNotFoundError) as raised:
        importlib.import_module("needs_httpx")
    mcpactor.cli._report.report(raised.value, debug=False, listen=None)
    err = capsys.readouterr().err
    assert "auth extra" not in err
    assert "needs_httpx.py:1" in err


def test_a_missing_extra_says_what_needs_it() -> None:
    with pytest.raises(ExtraMissing, match=r"^--x needs the otel extra") as raised:
        require("otel", "--x", modules=("a_module_nobody_installed",))
    assert raised.value.extra == "otel"
    assert raised.value.module == "a_module_nobody_installed"
