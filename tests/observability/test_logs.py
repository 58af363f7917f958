"""JSON lines: each record parses, carries the request's ids, and is bounded."""

from __future__ import annotations

import io
import json
import logging
import re
import sys
from collections.abc import Iterator
from typing import Final

import pytest
import trio

from mcpactor.observability import JsonFormatter, TextFormatter, use_json_logs, use_text_logs
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
        h.actor.peer.session_id = "session-1"
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
        h.actor.peer.session_id = "s" * 10_000
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


def test_a_record_holding_a_lone_surrogate_is_still_a_json_line() -> None:
    # A file name's undecodable bytes, in a message and in its exception.
    try:
        raise FileNotFoundError("no bad\udcff.txt")
    except FileNotFoundError:
        info = sys.exc_info()
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "reading %s", ("bad\udcff",), info)
    line = JsonFormatter().format(record)
    line.encode("utf-8")  # writable as it is
    entry = json.loads(line)
    assert entry["message"] == "reading bad\udcff"
    assert "no bad\udcff.txt" in entry["exc"]


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


# --- text lines ----------------------------------------------------------------------------

#: what a client sends to forge a record and to drive the operator's terminal
FORGED: Final = (
    'x\r\nINFO mcpactor.access: 10.0.0.1 "GET /" 200\x1b[2J\x1b]0;owned\x07\u2028\u202e\x85'
)


@pytest.fixture
def text_records() -> Iterator[io.StringIO]:
    # The handler ``mcpactor serve`` puts on root, on the loggers the test reads.
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(TextFormatter())
    loggers = [logging.getLogger("mcpactor"), _tool_log]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield stream
    finally:
        for logger in loggers:
            logger.removeHandler(handler)


def _assert_one_record_per_line(text: str) -> list[str]:
    # Each record's own line starts with its level; what follows it starts with whitespace.
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e]", text), text
    lines = text.splitlines()
    for line in lines:
        assert line.startswith(("DEBUG ", "INFO ", "WARNING ", "ERROR ", "CRITICAL ", " ")), line
    return [line for line in lines if not line.startswith(" ")]


async def test_a_tools_exception_cannot_forge_a_text_line(text_records: io.StringIO) -> None:
    server = Server("forger")

    @server.tool()
    async def parse(word: str) -> str:
        """Fail, quoting the argument as many parsers do."""
        raise ValueError(f"cannot parse {word}")

    async with open_session(server) as h:
        await h.initialize()
        result = await h.call_tool("parse", {"word": FORGED})
        assert result["isError"] is True
    text = text_records.getvalue()
    (record,) = _assert_one_record_per_line(text)
    assert record == "ERROR mcpactor: tool 'parse' failed"
    # The exception's line is there, escaped (its line breaks too), under the record.
    assert (
        '  ValueError: cannot parse x\\r\\nINFO mcpactor.access: 10.0.0.1 "GET /" 200'
        "\\x1b[2J\\x1b]0;owned\\x07\\u2028\\u202e\\x85"
    ) in text.splitlines()


def test_a_message_and_its_arguments_are_one_escaped_line(text_records: io.StringIO) -> None:
    _tool_log.warning("heard %s from %r", FORGED, "\x1b[31mred")
    _tool_log.warning(FORGED)
    first, second = text_records.getvalue().splitlines()
    assert first == (
        'WARNING tests.observability.tool: heard x\\r\\nINFO mcpactor.access: 10.0.0.1 "GET /"'
        " 200\\x1b[2J\\x1b]0;owned\\x07\\u2028\\u202e\\x85 from '\\x1b[31mred'"
    )
    assert second.startswith("WARNING tests.observability.tool: x\\r\\nINFO")
    assert len(_assert_one_record_per_line(text_records.getvalue())) == 2


def test_a_traceback_and_a_stack_follow_as_indented_lines(text_records: io.StringIO) -> None:
    try:
        raise KeyError("line one\nERROR mcpactor: forged")
    except KeyError:
        _tool_log.exception("failed", stack_info=True)
    text = text_records.getvalue()
    (record,) = _assert_one_record_per_line(text)
    assert record == "ERROR tests.observability.tool: failed"
    assert "  Traceback (most recent call last):" in text.splitlines()
    assert "  Stack (most recent call last):" in text.splitlines()
    # A KeyError's text is its key's repr; a message of another kind is escaped.
    assert "  KeyError: 'line one\\nERROR mcpactor: forged'" in text.splitlines()
    try:
        try:
            raise ValueError("inner\nWARNING forged")
        except ValueError as exc:
            exc.add_note("note\r\nERROR forged")
            raise ExceptionGroup("group\nINFO forged", [exc, OSError("os\nINFO x")]) from None
    except ExceptionGroup:
        _tool_log.exception("grouped")
    text = text_records.getvalue()
    assert len(_assert_one_record_per_line(text)) == 2
    for escaped in (
        "inner\\nWARNING forged",
        "note\\r\\nERROR forged",
        "group\\nINFO forged",
        "os\\nINFO x",
    ):
        assert escaped in text


@pytest.mark.parametrize("formatter", [JsonFormatter(), TextFormatter()])
def test_arguments_are_bounded_before_the_message_is_formatted(
    formatter: logging.Formatter,
) -> None:
    deep: list[object] = []
    for _ in range(100_000):
        deep = [deep]
    huge = "h" * 1_000_000

    class Exploding(Exception):
        def __str__(self) -> str:
            return str(deep)  # recursion without end, as a deep value's repr

    def message(*args: object) -> str:
        record = logging.LogRecord("x", logging.INFO, __file__, 1, "%s %r %s", args, None)
        text = formatter.format(record)
        return str(json.loads(text)["message"]) if isinstance(formatter, JsonFormatter) else text

    # Formatted whole, the list's repr would recurse past the interpreter's limit.
    shown = message(deep, {"k": deep}, Exploding("boom"))
    assert "unformattable" not in shown
    assert "[[[" in shown
    assert len(shown) <= MAX_MESSAGE + 40
    shown = message(huge, huge.encode(), KeyError(huge))
    assert len(shown) <= MAX_MESSAGE + 40
    assert shown.count("h") < MAX_MESSAGE


def test_a_record_whose_arguments_do_not_fit_is_still_one_text_line() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "%d items\n", ("many\r",), None)
    line = TextFormatter().format(record)
    assert "\n" not in line
    assert "unformattable" in line


def test_use_text_logs_replaces_the_root_handlers() -> None:
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    stream = io.StringIO()
    try:
        use_text_logs(stream, level="INFO")
        logging.getLogger("mcpactor.test").info("a\nb")
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in saved[0]:
            root.addHandler(handler)
        root.setLevel(saved[1])
    assert stream.getvalue() == "INFO mcpactor.test: a\\nb\n"
