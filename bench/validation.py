"""Micro-benchmark: what a tools/call pays to validate its arguments (not a unit test).

    python bench/validation.py [--calls N] [--repeats R] [--case NAME]

A tool is registered with a realistic 20-property ``inputSchema`` (strings with
minLength, pattern, enum and format, bounded integers and numbers, booleans, arrays of
strings, a nested object, a required list, no additional properties), and the server's
own validation step for ``tools/call`` (``_handlers._validate``, the coroutine the
handler awaits before binding the arguments) is timed on typical valid arguments and on
a few invalid ones. Each case is run ``--repeats`` times of ``--calls`` calls; the
median per call is printed in microseconds, with the fastest and slowest repeat.

The coroutine is driven by hand (``send(None)``): arguments this small are validated in
place, so it never suspends, and no event loop is needed to time it.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

from mcpactor import Server
from mcpactor.server._registered import _validate

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": 500},
        "repo": {"type": "string", "pattern": "^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$"},
        "branch": {"type": "string", "default": "main"},
        "language": {"enum": ["python", "rust", "go", "typescript", "java"]},
        "author_email": {"type": "string", "format": "email"},
        "since": {"type": "string", "format": "date-time"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100},
        "offset": {"type": "integer", "minimum": 0},
        "threshold": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "case_sensitive": {"type": "boolean"},
        "include_forks": {"type": "boolean", "default": False},
        "archived": {"type": "boolean"},
        "labels": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "maxItems": 20,
        },
        "paths": {"type": "array", "items": {"type": "string"}},
        "sort": {"type": "string", "enum": ["stars", "updated", "name"]},
        "order": {"type": "string", "enum": ["asc", "desc"], "default": "desc"},
        "owner": {
            "type": "object",
            "properties": {
                "login": {"type": "string", "minLength": 1},
                "id": {"type": "integer", "minimum": 1},
            },
            "required": ["login"],
            "additionalProperties": False,
        },
        "timeout_s": {"type": "number", "minimum": 0, "maximum": 600},
        "note": {"type": ["string", "null"], "maxLength": 200},
        "page_token": {"type": "string"},
    },
    "required": ["query", "repo", "limit"],
    "additionalProperties": False,
}

TYPICAL: dict[str, Any] = {
    "query": "async actor runtime",
    "repo": "example/mcpactor",
    "language": "python",
    "limit": 20,
    "threshold": 0.5,
    "case_sensitive": False,
    "labels": ["bug", "performance"],
    "paths": ["mcpactor/server", "tests"],
    "sort": "updated",
    "owner": {"login": "octo", "id": 42},
    "note": None,
}

FULL: dict[str, Any] = {
    **TYPICAL,
    "branch": "main",
    "author_email": "dev@example.org",
    "since": "2026-01-01T00:00:00Z",
    "offset": 40,
    "include_forks": True,
    "archived": False,
    "order": "asc",
    "timeout_s": 30,
    "page_token": "abc123",
}

CASES: dict[str, dict[str, Any]] = {
    "valid-required-only": {"query": "x", "repo": "a/b", "limit": 1},
    "valid-typical": TYPICAL,
    "valid-all-20": FULL,
    "invalid-out-of-range": {**TYPICAL, "limit": 0},
    "invalid-unknown-key": {**TYPICAL, "colour": "red"},
    "invalid-missing-required": {k: v for k, v in TYPICAL.items() if k != "repo"},
    "invalid-pattern": {**TYPICAL, "repo": "not a repo"},
}


def validator() -> Any:
    """The input validator of a tool registered with SCHEMA, as the server built it."""
    server = Server("bench-validation")

    @server.tool(input_schema=SCHEMA)
    def search(query: str) -> str:
        """Search (never called here: only the validation step is timed)."""
        return ""

    return server._registry.tools["search"].input_validator


def per_call(fn: Callable[[], Any], calls: int) -> float:
    """Seconds per call of ``fn`` over ``calls`` calls."""
    start = time.perf_counter_ns()
    for _ in range(calls):
        fn()
    return (time.perf_counter_ns() - start) / calls / 1e9


def request_step(checker: Any, arguments: dict[str, Any]) -> Callable[[], Any]:
    """One call of the handler's validation step, driven without an event loop."""

    def step() -> Any:
        coro = _validate(checker, arguments)
        try:
            coro.send(None)
        except StopIteration as done:
            return done.value
        raise AssertionError("validation suspended")

    return step


def main() -> None:
    """Print the per-call validation cost of each case."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--case", choices=sorted(CASES), action="append")
    options = parser.parse_args()
    checker = validator()
    for name in options.case or CASES:
        arguments = CASES[name]
        step = request_step(checker, arguments)
        errors = step()  # also builds what is built on first use
        assert (not errors) == name.startswith("valid"), (name, errors)
        calls = options.calls if not errors else max(options.calls // 20, 100)
        gc.collect()
        times = sorted(per_call(step, calls) for _ in range(options.repeats))
        print(
            f"{name:26} {statistics.median(times) * 1e6:8.2f} us/call"
            f"  (min {times[0] * 1e6:.2f}, max {times[-1] * 1e6:.2f};"
            f" {options.repeats} x {calls} calls; {len(errors)} errors)"
        )


if __name__ == "__main__":
    main()
