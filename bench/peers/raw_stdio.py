"""The framework-free ceiling on stdio: read a line, parse it, write the answer, flush.

One request at a time, no threads, no event loop: initialize, tools/call of echo,
echo_sync and add, an empty result for any other request, nothing for notifications.
No sleep, progress or cancellation (the targets file skips those tests).
"""

from __future__ import annotations

import sys

from contract import ECHO_TOOLS, init_result
from orjson import dumps, loads
from splice import ECHO_AFTER, ECHO_BEFORE, call_result


def answer(message: dict[str, object]) -> bytes | None:
    """The reply line to one message, or None for a notification."""
    if "id" not in message:
        return None
    head = b'{"jsonrpc":"2.0","id":' + dumps(message["id"]) + b',"result":'
    method = message.get("method")
    if method == "tools/call":
        params = message["params"]
        arguments = params.get("arguments") or {}
        if params.get("name") in ECHO_TOOLS:
            text = dumps(str(arguments.get("text", "")))
            return head + ECHO_BEFORE + text + ECHO_AFTER + b"}\n"
        return head + call_result(params) + b"}\n"
    if method == "initialize":
        return head + dumps(init_result("raw-stdio")) + b"}\n"
    return head + b"{}}\n"


def main() -> None:
    """Serve stdin until EOF."""
    write, flush = sys.stdout.buffer.write, sys.stdout.buffer.flush
    for line in sys.stdin.buffer:
        reply = answer(loads(line))
        if reply is not None:
            write(reply)
            flush()


if __name__ == "__main__":
    try:  # noqa: SIM105 - contextlib would add to the ceiling's cold start
        main()
    except (BrokenPipeError, KeyboardInterrupt):
        pass
