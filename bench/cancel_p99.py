"""``notifications/cancelled`` to the handler's ``finally``: median and p99 over many runs.

    python bench/cancel_p99.py [--runs 200] [--python PATH]

Serves ``bench/mcpactor_server.py stdio`` with ``MCPBENCH_EVENT_LOG`` set (the harness
contract: the ``sleep`` tool logs when it starts and when its ``finally`` runs), then
repeatedly calls ``sleep(10)``, waits for its start line, sends
``notifications/cancelled`` and reads the time its ``finally`` logged. The harness's own
``cancel`` test does three of these per run; this does enough for a p99.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent


def _send(process: subprocess.Popen[bytes], message: dict[str, object]) -> None:
    assert process.stdin is not None
    process.stdin.write(orjson.dumps(message) + b"\n")
    process.stdin.flush()


def _wait_for(log: Path, count: int, kind: str, timeout: float = 10.0) -> float:
    # The count-th line of this kind: its timestamp. Polls, as the harness does.
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = [line.split() for line in log.read_text().splitlines()]
        times = [float(parts[1]) for parts in lines if parts and parts[0] == kind]
        if len(times) >= count:
            return times[count - 1]
        time.sleep(0.0002)
    raise TimeoutError(f"no {kind!r} line #{count} in {log}")


def main() -> None:
    """Measure and print the cancellation latency."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "events.log"
        log.write_text("")
        process = subprocess.Popen(
            [args.python, str(HERE / "mcpactor_server.py"), "stdio"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            env={**os.environ, "MCPBENCH_EVENT_LOG": str(log)},
        )
        try:
            _send(
                process,
                {
                    "jsonrpc": "2.0",
                    "id": "init",
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "cancel-p99", "version": "1"},
                    },
                },
            )
            _send(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            latencies = []
            for run in range(1, args.runs + 1):
                call = {"name": "sleep", "arguments": {"seconds": 10}}
                _send(
                    process, {"jsonrpc": "2.0", "id": run, "method": "tools/call", "params": call}
                )
                _wait_for(log, run, "start")
                sent = time.time()
                _send(
                    process,
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/cancelled",
                        "params": {"requestId": run, "reason": "measuring"},
                    },
                )
                latencies.append((_wait_for(log, run, "end") - sent) * 1e3)
        finally:
            assert process.stdin is not None
            process.stdin.close()
            process.wait(10)
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, round(0.99 * (len(latencies) - 1)))]
    print(
        f"{len(latencies)} cancellations: median {statistics.median(latencies):.2f} ms, "
        f"p99 {p99:.2f} ms, max {latencies[-1]:.2f} ms"
    )


if __name__ == "__main__":
    main()
