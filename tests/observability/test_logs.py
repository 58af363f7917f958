"""JSON lines: each record parses, carries the request's ids, and is bounded."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator

import pytest
import trio

from mcpactor.observability import JsonFormatter, use_json_logs
from mcpactor.observability._logs import MAX_FIELD, MAX_MESSAGE
from mcpactor.runtime._metrics import METRICS
from mcpactor.server import Server
from tests.runtime.conftest import open_session, tool_text

_tool_log = logging.getLogger("tests.observability.tool")


@pytest.fixture
def records() -> Iterator[io.StringIO]:
    # A handler of our own on the loggers the test reads, as use_json_logs puts on root.
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    loggers = [logging.getLogger("mcpactor"), _tool_log]
    for logger in loggers:
        logger.addHandler(handler)
    METRICS.log_context = True
    try:
        yield stream
    finally:
        METRICS.log_context = False
        for logger in loggers:
            logger.removeHandler(handler)


def _lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def _server() -> Server:
    server = Server("logged")

    @server.tool()
    async def chatty(word: str) -> str:
        """Log a line while serving."""
        _tool_log.warning("heard %s", word)
        return word

    @server.prompt()
    async def broken() -> str:
        """Raise."""
        raise ValueError("broken prompt")

    return server


async def test_records_in_a_request_carry_its_ids(records: io.StringIO) -> None:
    async with open_session(_server()) as h:
        await h.initialize()
        h.actor.session_id = "session-1"
        assert tool_text(await h.call_tool("chatty", {"word": "hello"})) == "hello"
        failed = await h.send_request("prompts/get", {"name": "broken"}, request_id="req-9")
        await h.error_of(failed)
    _tool_log.warning("outside any request")
    heard, failure, outside = _lines(records)
    assert heard["message"] == "heard hello"
    assert heard["level"] == "WARNING"
    assert heard["logger"] == "tests.observability.tool"
    assert heard["session_id"] == "session-1"
    assert heard["method"] == "tools/call"
    assert isinstance(heard["request_id"], int)
    assert str(heard["ts"]).endswith("Z")
    assert failure["request_id"] == "req-9"
    assert failure["method"] == "prompts/get"
    assert failure["level"] == "ERROR"
    assert "ValueError: broken prompt" in str(failure["exc"])
    assert "request_id" not in outside
    assert "session_id" not in outside


async def test_every_field_from_the_wire_is_clipped(records: io.StringIO) -> None:
    async with open_session(_server()) as h:
        await h.initialize()
        h.actor.session_id = "s" * 10_000
        word = "w" * 100_000
        called = await h.send_request(
            "tools/call", {"name": "chatty", "arguments": {"word": word}}, request_id="r" * 10_000
        )
        await h.result_of(called)
    (heard,) = _lines(records)
    assert len(str(heard["message"])) == MAX_MESSAGE
    assert str(heard["message"]).endswith("…")
    assert len(str(heard["request_id"])) == MAX_FIELD
    assert len(str(heard["session_id"])) == MAX_FIELD


def test_a_record_that_cannot_be_formatted_is_still_a_line() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "%d items", ("many",), None)
    entry = json.loads(JsonFormatter().format(record))
    assert "unformattable" in entry["message"]


async def test_use_json_logs_replaces_the_root_handlers() -> None:
    root = logging.getLogger()
    saved = (list(root.handlers), root.level, METRICS.log_context)
    stream = io.StringIO()
    try:
        use_json_logs(stream, level="INFO")
        assert METRICS.log_context
        logging.getLogger("mcpactor.test").info("started")
        await trio.lowlevel.checkpoint()
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in saved[0]:
            root.addHandler(handler)
        root.setLevel(saved[1])
        METRICS.log_context = saved[2]
    (line,) = _lines(stream)
    assert line["message"] == "started"
    assert line["logger"] == "mcpactor.test"
    assert sys.stderr is not stream
