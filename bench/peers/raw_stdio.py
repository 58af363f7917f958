"""The framework-free ceiling on stdio: read a line, parse it, write the answer, flush.

One request at a time, no threads, no event loop: initialize, tools/call of echo,
echo_sync and add, an empty result for any other request, nothing for notifications.
No sleep, progress or cancellation (the targets file skips those tests).
"""

from __future__ import annotations

import sys

import orjson
from contract import canned_call, init_result


def answer(message: dict[str, object]) -> bytes | None:
    """The reply line to one message, or None for a notification."""
    if "id" not in message:
        return None
    method = message.get("method")
    if method == "initialize":
        result = init_result("raw-stdio")
    elif method == "tools/call":
        result = canned_call(message.get("params") or {})
    else:
        result = {}
    return orjson.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + b"\n"


def main() -> None:
    """Serve stdin until EOF."""
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        reply = answer(orjson.loads(line))
        if reply is not None:
            out.write(reply)
            out.flush()


if __name__ == "__main__":
    try:  # noqa: SIM105 - contextlib would add to the ceiling's cold start
        main()
    except (BrokenPipeError, KeyboardInterrupt):
        pass
