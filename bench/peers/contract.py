"""The contract every benchmark server follows, so that one driver measures them all.

    tools     echo(text) -> text, async        echo_sync(text) -> text, a plain function
              add(a, b) -> a + b               sleep(seconds) -> "slept"
              progress(steps) -> "done N", reporting progress i/steps at each step
    resource  bench://static, the text "static resource"
    prompt    greet(name)
    argv      SERVER stdio
              SERVER http HOST PORT [--json] [--stateless] [--sse]   (endpoint /mcp)

``MCPBENCH_EVENT_LOG=FILE``: the sleep tool appends ``start TIME SECONDS`` when it starts
and ``end TIME SECONDS HOW`` from its ``finally`` (HOW: completed, cancelled or error),
TIME in Unix seconds. The driver reads it to see when cancelled work really stopped.

This module imports nothing heavy: the framework-free stdio server's cold start counts it.
"""

from __future__ import annotations

import os
import sys
import time

ECHO_TOOLS = ("echo", "echo_sync")
PROTOCOL_VERSION = "2025-11-25"

_event_log_path = os.environ.get("MCPBENCH_EVENT_LOG")
_event_log = None


def log_event(kind: str, seconds: float, how: str = "") -> None:
    """Append one line to the event log, if the driver asked for one."""
    global _event_log
    if not _event_log_path:
        return
    if _event_log is None:
        _event_log = open(_event_log_path, "a", buffering=1)  # noqa: SIM115 - lives as long as we do
    _event_log.write(f"{kind} {time.time():.6f} {seconds} {how}".rstrip() + "\n")


def parse_argv(argv: list[str]) -> dict[str, object]:
    """The command line of the contract as a dict: transport, host, port and the flags."""
    if len(argv) < 2 or argv[1] not in ("stdio", "http"):
        sys.exit(f"usage: {argv[0]} stdio | http HOST PORT [--json] [--stateless] [--sse]")
    words = argv[2:]
    flags = {w for w in words if w.startswith("--")}
    unknown = flags - {"--json", "--stateless", "--sse"}
    if unknown:
        sys.exit(f"{argv[0]}: unknown options {sorted(unknown)}")
    where = [w for w in words if not w.startswith("--")]
    return {
        "transport": argv[1],
        "host": where[0] if where else "127.0.0.1",
        "port": int(where[1]) if len(where) > 1 else 8000,
        "json": "--json" in flags,
        "stateless": "--stateless" in flags,
        "sse": "--sse" in flags,
    }


def init_result(name: str) -> dict[str, object]:
    """What the framework-free servers answer to initialize."""
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {"tools": {}},
        "serverInfo": {"name": name, "version": "0"},
    }


def text_result(text: str) -> dict[str, object]:
    """A tools/call result carrying one text block."""
    return {"content": [{"type": "text", "text": text}], "isError": False}


def canned_call(params: dict[str, object]) -> dict[str, object]:
    """The framework-free answer to a tools/call other than sleep: echo, echo_sync or add."""
    name = params.get("name")
    args = params.get("arguments") or {}
    if name in ECHO_TOOLS:
        return text_result(str(args.get("text", "")))
    if name == "add":
        return text_result(str(int(args["a"]) + int(args["b"])))
    return {"content": [{"type": "text", "text": f"unknown tool {name!r}"}], "isError": True}
