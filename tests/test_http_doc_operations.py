"""docs/http.md, as an operator follows it: the URL the serving sample prints is one its
own allow-list accepts, the authentication sample works as an ``--authenticate`` module,
and the access-log line it shows has the shape of a real one."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import urllib.parse
from pathlib import Path
from typing import Final

import trio

from tests.doc_includes import expanded
from tests.test_cli_http_options import serving_in
from tests.transports._cli import first_line
from tests.transports._http_client import McpClient, SocketClient

DOC: Final = Path(__file__).resolve().parents[1] / "docs" / "http.md"
TEXT: Final = expanded(DOC)
GUARD: Final = 60.0
SERVE: Final = [sys.executable, "-m", "mcpactor", "serve"]

INITIALIZE: Final = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "docs", "version": "1"},
    },
}


def python_sample(containing: str) -> str:
    samples = [s for s in re.findall(r"```python\n(.*?)```", TEXT, re.S) if containing in s]
    assert len(samples) == 1, f"expected one Python sample with {containing!r}"
    return samples[0]


async def test_the_url_the_serving_sample_prints_is_accepted(tmp_path: Path) -> None:
    sample = python_sample("serve_http")
    assert sample.count("port=8000") == 1
    script = tmp_path / "serve_notes.py"
    script.write_text(sample.replace("port=8000", "port=0"))
    process = await trio.lowlevel.open_process(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert process.stdout is not None
    try:
        with trio.fail_after(GUARD):
            url = urllib.parse.urlsplit((await first_line(process.stdout)).split()[-1])
            assert url.port is not None
            async with trio.open_nursery() as nursery:
                # Where the URL points (localhost is loopback), with the Host it names.
                http = SocketClient("127.0.0.1", url.port, nursery)
                client = McpClient(http, path=url.path)
                answer = await client.post(INITIALIZE, host=url.netloc)
                assert answer.status == 200
                assert (await answer.json())["result"]["serverInfo"]["name"] == "notes"
                await http.aclose()
            process.send_signal(signal.SIGTERM)
            await process.wait()
        assert process.returncode == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await process.stdout.aclose()


async def test_the_authentication_sample_is_an_authenticate_module(tmp_path: Path) -> None:
    (tmp_path / "tokens.py").write_text(python_sample("authenticate"))
    (tmp_path / "weather.py").write_text(
        "from mcpactor import Server\n\nserver = Server('weather')\n"
    )
    command = "mcpactor serve weather.py --http 8000 --authenticate tokens:authenticate"
    assert command in TEXT
    arguments = command.split()[2:]
    arguments[arguments.index("8000")] = "127.0.0.1:0"
    with trio.fail_after(GUARD):
        async with serving_in(tmp_path, arguments) as port, trio.open_nursery() as n:
            http = SocketClient("127.0.0.1", port, n)
            client = McpClient(http)
            refused = await client.post(INITIALIZE)
            assert refused.status == 401
            await refused.body()
            accepted = await client.post(INITIALIZE, authorization="Bearer s3cret")
            assert accepted.status == 200
            await accepted.body()
            await http.aclose()


async def test_the_access_log_line_shown_is_the_shape_of_a_real_one(tmp_path: Path) -> None:
    shown = re.search(r"^INFO mcpactor\.access: .*$", TEXT, re.M)
    assert shown is not None
    shape = re.compile(
        r'^INFO mcpactor\.access: [\d.]+:\d+ "(GET|POST) (/\S*)" \d{3} \d+ [\d.]+ms$'
    )
    assert shape.match(shown.group(0)), shown.group(0)
    (tmp_path / "weather.py").write_text(
        "from mcpactor import Server\n\nserver = Server('weather')\n"
    )
    with trio.fail_after(GUARD):
        process = await trio.lowlevel.open_process(
            [*SERVE, "weather.py", "--http", "127.0.0.1:0", "--access-log"],
            cwd=tmp_path,
            stderr=subprocess.PIPE,
        )
        assert process.stderr is not None
        try:
            line = await first_line(process.stderr)
            port = int(line.split("serving ", 1)[1].split()[0].rsplit(":", 1)[1].split("/")[0])
            async with trio.open_nursery() as nursery:
                http = SocketClient("127.0.0.1", port, nursery)
                answer = await McpClient(http).post(INITIALIZE)
                await answer.body()
                await http.aclose()
            process.send_signal(signal.SIGTERM)
            await process.wait()
            rest = line.encode()
            while chunk := await process.stderr.receive_some(65536):
                rest += chunk
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
            await process.stderr.aclose()
    logged = [text for text in rest.decode().splitlines() if "mcpactor.access" in text]
    assert logged
    assert all(shape.match(text) for text in logged), logged
    assert any('"POST /mcp" 200' in text for text in logged), logged
