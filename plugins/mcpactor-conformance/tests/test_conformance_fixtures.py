"""The conformance fixtures, checked by value.

The official suite's checks are loose (a scenario can pass although the fixture is
missing or its round trip failed), so these tests play the suite's client with the
exact requests it sends and check what comes back: texts, decoded media, elicitation
forms, progress tokens, log messages and their timing. Inside the mcpactor repository
every message the server sends is also checked against the official schema.
"""

from __future__ import annotations

import base64
import io
import itertools
import json
import struct
import wave
import zlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from importlib.metadata import entry_points
from typing import Any, Final

import jsonschema
import mcpactor_conformance
import pytest
import trio
import trio.testing
from mcpactor_conformance import server

from mcpactor import ProtocolError, RequestError
from mcpactor.cli import load_server
from mcpactor.client import ClientSession
from mcpactor.protocol import LATEST, JSONObject, JSONValue
from mcpactor.runtime import Outbound, SessionActor
from mcpactor.testing import SESSION_REVISIONS, client

check_server_message: Callable[..., None] | None
try:
    from tests.spec_schema import check_server_message
except ImportError:  # the plugin tested on its own, outside the mcpactor repository
    check_server_message = None

# Long enough for every legitimate virtual wait; a hang fails instead of blocking.
GUARD: Final = 1000.0

TOOLS: Final = {
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_tool_with_logging",
    "test_tool_with_progress",
    "test_error_handling",
    "test_sampling",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "json_schema_2020_12_tool",
    "test_reconnection",
}
#: what the 0.2 suite adds: the 2026-07-28 fixtures and the tasks extension's
STATELESS_TOOLS: Final = {
    "test_missing_capability",
    "test_streaming_elicitation",
    "test_logging_tool",
    "test_trigger_tool_change",
    "test_trigger_prompt_change",
    "test_x_mcp_header",
    "test_input_required_result_elicitation",
    "test_input_required_result_sampling",
    "test_input_required_result_list_roots",
    "test_input_required_result_request_state",
    "test_input_required_result_multiple_inputs",
    "test_input_required_result_multi_round",
    "test_input_required_result_tampered_state",
    "test_input_required_result_capabilities",
}
TASK_TOOLS: Final = {
    "greet",
    "slow_compute",
    "failing_job",
    "protocol_error_job",
    "confirm_delete",
    "multi_input",
    "test_tool_with_task",
}

# What the suite's client answers, word for word.
SAMPLING_ANSWER: Final = {
    "role": "assistant",
    "content": {"type": "text", "text": "This is a test response from the client"},
    "model": "test-model",
    "stopReason": "endTurn",
}
ELICITATION_ANSWER: Final = {
    "action": "accept",
    "content": {"username": "testuser", "email": "test@example.com"},
}
DEFAULTS_ANSWER: Final = {
    "action": "accept",
    "content": {
        "name": "Jane Smith",
        "age": 25,
        "score": 88,
        "status": "inactive",
        "verified": False,
    },
}
ENUMS_ANSWER: Final = {
    "action": "accept",
    "content": {
        "untitledSingle": "option1",
        "titledSingle": "value1",
        "legacyEnum": "opt1",
        "untitledMulti": ["option1", "option2"],
        "titledMulti": ["value1", "value2"],
    },
}


class Recorder:
    """Every message the server sent, with its (virtual) arrival time; schema-checked."""

    def __init__(self, revision: str) -> None:
        self.revision = revision
        #: (arrival time, message) in arrival order
        self.seen: list[tuple[float, JSONObject]] = []

    def __call__(self, message: JSONValue, request_method: str | None) -> None:
        assert isinstance(message, dict)
        if request_method == "initialize" and "result" in message:
            self.revision = message["result"]["protocolVersion"]
        if check_server_message is not None:
            check_server_message(message, self.revision, request_method=request_method)
        self.seen.append((trio.current_time(), message))

    def sent(self, method: str) -> list[tuple[float, JSONObject]]:
        """The requests and notifications of ``method`` the server sent, with times."""
        return [(at, message) for at, message in self.seen if message.get("method") == method]

    def index_of_result(self, result: JSONObject) -> int:
        """Where the response carrying ``result`` is in ``seen``."""
        for index, (_, message) in enumerate(self.seen):
            if "method" not in message and message.get("result") == result:
                return index
        raise AssertionError(f"no response carries {result!r}")

    def before(self, sent: list[tuple[float, JSONObject]], result: JSONObject) -> bool:
        """Whether every message in ``sent`` arrived before the response with ``result``."""
        end = self.index_of_result(result)
        return all(self.seen.index(entry) < end for entry in sent)


class Harness:
    """A client of the conformance server and the record of what the server sent."""

    def __init__(self, session: ClientSession, recorder: Recorder) -> None:
        self.session = session
        self.recorder = recorder
        #: the result of the last ``text`` call
        self.last_result: JSONObject = {}

    async def call(self, name: str, arguments: JSONObject | None = None) -> JSONObject:
        """Call a tool as the suite does: without ``arguments`` when there are none."""
        params: JSONObject = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return await self.session.request("tools/call", params)

    async def text(self, name: str, arguments: JSONObject | None = None) -> str:
        """Call a tool that must succeed with one text item; return the text."""
        result = await self.call(name, arguments)
        self.last_result = result
        assert "isError" not in result, result
        [item] = result["content"]
        assert item["type"] == "text"
        text: str = item["text"]
        return text


@asynccontextmanager
async def connect(revision: str = LATEST.version, **client_args: Any) -> AsyncIterator[Harness]:
    """An in-memory client of the conformance server, initialized at ``revision``."""
    recorder = Recorder(revision)
    with trio.fail_after(GUARD):
        async with client(
            server, protocol_version=revision, on_server_message=recorder, **client_args
        ) as session:
            yield Harness(session, recorder)


def gaps(sent: list[tuple[float, JSONObject]]) -> list[float]:
    """The time between each message in ``sent`` and the next."""
    return [later - earlier for (earlier, _), (later, _) in itertools.pairwise(sent)]


def answering(answer: JSONObject, asked: list[JSONObject]) -> Callable[[JSONObject], Any]:
    """A sampling or elicitation handler that records what it was asked."""

    async def handler(params: JSONObject) -> JSONObject:
        asked.append(params)
        return answer

    return handler


def assert_png(data: bytes) -> None:
    """Check that ``data`` is a whole, well-formed 1×1 RGB PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks: list[tuple[bytes, bytes]] = []
    at = 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length : at + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"bad CRC in the {kind!r} chunk"
        chunks.append((kind, body))
        at += 12 + length
    assert at == len(data)
    kinds = [kind for kind, _ in chunks]
    assert kinds[0] == b"IHDR"
    assert kinds[-1] == b"IEND"
    width, height, depth, colour, *_ = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (width, height, depth, colour) == (1, 1, 8, 2)
    pixels = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    assert len(pixels) == height * (1 + width * 3)


def assert_wav(data: bytes) -> None:
    """Check that ``data`` is a readable WAV file with some audio in it."""
    assert data[:4] == b"RIFF"
    assert data[8:12] == b"WAVE"
    with wave.open(io.BytesIO(data)) as audio:
        assert audio.getnchannels() == 1
        assert audio.getframerate() == 8000
        assert audio.getnframes() == 8
        assert len(audio.readframes(8)) == 8 * audio.getsampwidth()


# --- the plugin and the session --------------------------------------------------------


def test_entry_point_names_the_server() -> None:
    [entry_point] = entry_points(group="mcpactor.servers", name="conformance")
    assert entry_point.value == "mcpactor_conformance:server"
    assert entry_point.load() is server
    assert load_server("mcpactor_conformance:server") is server


def test_media_fixtures_are_well_formed() -> None:
    assert_png(mcpactor_conformance.PIXEL_PNG)
    assert_wav(mcpactor_conformance.SILENCE_WAV)


async def test_initialize_declares_what_the_suite_uses() -> None:
    async with connect() as harness:
        session = harness.session
        assert session.server.protocol_version == "2025-11-25"
        assert session.server.capabilities == {
            "logging": {},
            "tools": {"listChanged": True},
            "resources": {"subscribe": True, "listChanged": True},
            "prompts": {"listChanged": True},
            "completions": {},
            # some fixtures may run as tasks
            "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
        }
        assert session.server.info is not None
        assert session.server.info["name"] == "mcpactor-conformance"


async def test_ping_and_set_level_answer_an_empty_object() -> None:
    async with connect() as harness:
        assert await harness.session.ping() == {}
        assert await harness.session.set_logging_level("info") == {}


# --- tools: listing and content -----------------------------------------------------------


@pytest.mark.parametrize("revision", SESSION_REVISIONS)
async def test_tools_list_is_the_fixture_set(revision: str) -> None:
    async with connect(revision) as harness:
        tools = await harness.session.list_tools()
    assert {tool["name"] for tool in tools} == TOOLS | STATELESS_TOOLS | TASK_TOOLS
    assert len(tools) == len(TOOLS | STATELESS_TOOLS | TASK_TOOLS)
    for tool in tools:
        assert isinstance(tool["description"], str)
        assert tool["description"].strip(), tool["name"]
        assert tool["inputSchema"]["type"] == "object"


@pytest.mark.parametrize(
    ("tool", "content"),
    [
        (
            "test_simple_text",
            [{"type": "text", "text": "This is a simple text response for testing."}],
        ),
        (
            "test_embedded_resource",
            [
                {
                    "type": "resource",
                    "resource": {
                        "uri": "test://embedded-resource",
                        "mimeType": "text/plain",
                        "text": "This is an embedded resource content.",
                    },
                }
            ],
        ),
    ],
)
async def test_tool_called_without_arguments_returns_its_content(
    tool: str, content: list[JSONObject]
) -> None:
    async with connect() as harness:
        result = await harness.call(tool)
    assert "isError" not in result
    assert result["content"] == content


async def test_image_content_is_a_png() -> None:
    async with connect() as harness:
        result = await harness.call("test_image_content", {})
    [image] = result["content"]
    assert image["type"] == "image"
    assert image["mimeType"] == "image/png"
    assert_png(base64.b64decode(image["data"], validate=True))


async def test_audio_content_is_a_wav() -> None:
    async with connect() as harness:
        result = await harness.call("test_audio_content")
    [audio] = result["content"]
    assert audio["type"] == "audio"
    assert audio["mimeType"] == "audio/wav"
    assert_wav(base64.b64decode(audio["data"], validate=True))


async def test_multiple_content_types_come_in_order() -> None:
    async with connect() as harness:
        result = await harness.call("test_multiple_content_types")
    text, image, resource = result["content"]
    assert text == {"type": "text", "text": "Multiple content types test:"}
    assert image["type"] == "image"
    assert image["mimeType"] == "image/png"
    assert_png(base64.b64decode(image["data"], validate=True))
    assert resource["type"] == "resource"
    embedded = resource["resource"]
    assert embedded["uri"] == "test://mixed-content-resource"
    assert embedded["mimeType"] == "application/json"
    assert json.loads(embedded["text"]) == {"test": "data", "value": 123}


async def test_error_handling_is_a_tool_error_not_a_jsonrpc_error() -> None:
    async with connect() as harness:
        # A JSON-RPC error would raise RequestError here.
        result = await harness.call("test_error_handling")
    assert result["isError"] is True
    assert result["content"] == [
        {"type": "text", "text": "This tool intentionally returns an error for testing"}
    ]


# --- tools: logging and progress -----------------------------------------------------------


async def test_logging_sends_three_info_messages_50_ms_apart(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect() as harness:
        # As the suite does: ask for everything, then call.
        assert await harness.session.set_logging_level("debug") == {}
        text = await harness.text("test_tool_with_logging")
        logged = harness.recorder.sent("notifications/message")
        messages = [message for _, message in logged]
    assert text == "Tool with logging executed successfully"
    assert [m["params"] for m in messages] == [
        {"level": "info", "data": "Tool execution started"},
        {"level": "info", "data": "Tool processing data"},
        {"level": "info", "data": "Tool execution completed"},
    ]
    assert gaps(logged) == pytest.approx([0.05, 0.05])
    assert harness.recorder.before(logged, harness.last_result)


async def test_logging_honours_the_level_the_client_set(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect() as harness:
        assert await harness.session.set_logging_level("warning") == {}
        text = await harness.text("test_tool_with_logging")
        assert text == "Tool with logging executed successfully"
        await trio.testing.wait_all_tasks_blocked()
        assert harness.recorder.sent("notifications/message") == []


@pytest.mark.parametrize("token", ["progress-test-1", 7, "7"])
async def test_progress_echoes_the_token_unchanged(
    token: str | int, autojump_clock: trio.testing.MockClock
) -> None:
    async with connect() as harness:
        text = await harness.text("test_tool_with_progress")
        assert text == "no progress token was given"
        assert harness.recorder.sent("notifications/progress") == []

        result = await harness.session.call_tool(
            "test_tool_with_progress", meta={"progressToken": token}
        )
        progress = harness.recorder.sent("notifications/progress")
    assert result["content"] == [{"type": "text", "text": str(token)}]
    assert [message["params"] for _, message in progress] == [
        {
            "progressToken": token,
            "progress": 0,
            "total": 100,
            "message": "Completed step 0 of 100",
        },
        {
            "progressToken": token,
            "progress": 50,
            "total": 100,
            "message": "Completed step 50 of 100",
        },
        {
            "progressToken": token,
            "progress": 100,
            "total": 100,
            "message": "Completed step 100 of 100",
        },
    ]
    # The token keeps its JSON type: the suite's client drops any other token.
    assert all(type(m["params"]["progressToken"]) is type(token) for _, m in progress)
    assert gaps(progress) == pytest.approx([0.05, 0.05])
    assert harness.recorder.before(progress, result)


async def test_progress_reaches_the_callers_handler(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The suite's client replaces the token with its numeric request id, as ours does.
    updates: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))

    async with connect() as harness:
        result = await harness.session.call_tool(
            "test_tool_with_progress", progress_handler=on_progress
        )
        tokens = [
            m["params"]["progressToken"]
            for _, m in harness.recorder.sent("notifications/progress")
        ]
    [text] = result["content"]
    assert tokens == [int(text["text"])] * 3
    assert updates == [
        (0, 100, "Completed step 0 of 100"),
        (50, 100, "Completed step 50 of 100"),
        (100, 100, "Completed step 100 of 100"),
    ]


# --- tools: sampling ---------------------------------------------------------------------


async def test_sampling_round_trip() -> None:
    asked: list[JSONObject] = []
    async with connect(sampling_handler=answering(SAMPLING_ANSWER, asked)) as harness:
        text = await harness.text("test_sampling", {"prompt": "Test prompt for sampling"})
    assert asked == [
        {
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Test prompt for sampling"}}
            ],
            "maxTokens": 100,
        }
    ]
    assert text == "LLM response: This is a test response from the client"


async def test_sampling_without_the_capability_is_explained() -> None:
    async with connect() as harness:
        text = await harness.text("test_sampling", {"prompt": "hello"})
        assert harness.recorder.sent("sampling/createMessage") == []
    assert text.startswith("Sampling not supported or failed: ")
    assert "'sampling' capability" in text


async def test_sampling_error_from_the_client_is_explained() -> None:
    async def refuse(params: JSONObject) -> JSONObject:
        raise RequestError(-1, "User rejected sampling request")

    async with connect(sampling_handler=refuse) as harness:
        text = await harness.text("test_sampling", {"prompt": "hello"})
        assert len(harness.recorder.sent("sampling/createMessage")) == 1
    assert text == "Sampling not supported or failed: User rejected sampling request"


async def test_sampling_needs_its_prompt() -> None:
    async with connect() as harness:
        result = await harness.call("test_sampling", {})
    assert result["isError"] is True
    assert "'prompt' is a required property" in result["content"][0]["text"]


# --- tools: elicitation ------------------------------------------------------------------


@pytest.mark.parametrize("revision", ["2025-06-18", "2025-11-25"])
async def test_elicitation_round_trip(revision: str) -> None:
    asked: list[JSONObject] = []
    handler = answering(ELICITATION_ANSWER, asked)
    async with connect(revision, elicitation_handler=handler) as harness:
        text = await harness.text("test_elicitation", {"message": "Please provide your details"})
    mode = {"mode": "form"} if revision == "2025-11-25" else {}
    assert asked == [
        {
            "message": "Please provide your details",
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "username": {"type": "string", "description": "Your user name"},
                    "email": {"type": "string", "description": "Your email address"},
                },
                "required": ["username", "email"],
            },
            **mode,
        }
    ]
    jsonschema.validate(ELICITATION_ANSWER["content"], asked[0]["requestedSchema"])
    assert text == (
        'User response: action=accept, content={"username": "testuser", '
        '"email": "test@example.com"}'
    )


async def test_elicitation_decline_has_no_content() -> None:
    handler = answering({"action": "decline"}, [])
    async with connect(elicitation_handler=handler) as harness:
        text = await harness.text("test_elicitation", {"message": "Who are you?"})
    assert text == "User response: action=decline, content=null"


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-03-26", "2025-11-25"])
async def test_elicitation_without_the_capability_is_explained(revision: str) -> None:
    # Before 2025-06-18 a client cannot declare elicitation at all.
    handler = answering(ELICITATION_ANSWER, []) if revision < "2025-06-18" else None
    async with connect(revision, elicitation_handler=handler) as harness:
        texts = [
            await harness.text("test_elicitation", {"message": "Who are you?"}),
            await harness.text("test_elicitation_sep1034_defaults"),
        ]
        assert harness.recorder.sent("elicitation/create") == []
    for text in texts:
        assert text.startswith("Elicitation not supported or failed: ")
        assert "elicitation" in text.removeprefix("Elicitation")
        assert "capability" in text


async def test_elicitation_sep1034_every_field_has_a_typed_default() -> None:
    asked: list[JSONObject] = []
    async with connect(elicitation_handler=answering(DEFAULTS_ANSWER, asked)) as harness:
        text = await harness.text("test_elicitation_sep1034_defaults")
    [params] = asked
    schema = params["requestedSchema"]
    assert schema == {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "description": "Verification status", "default": True},
        },
    }
    properties = schema["properties"]
    assert type(properties["age"]["default"]) is int
    assert type(properties["score"]["default"]) is float
    assert type(properties["verified"]["default"]) is bool
    assert "required" not in schema
    jsonschema.validate(DEFAULTS_ANSWER["content"], schema)
    assert text == (
        'Elicitation completed: action=accept, content={"name": "Jane Smith", "age": 25, '
        '"score": 88, "status": "inactive", "verified": false}'
    )


async def test_elicitation_sep1330_has_every_enum_style() -> None:
    asked: list[JSONObject] = []
    async with connect(elicitation_handler=answering(ENUMS_ANSWER, asked)) as harness:
        text = await harness.text("test_elicitation_sep1330_enums")
    [params] = asked
    schema = params["requestedSchema"]
    properties = schema["properties"]
    assert set(properties) == {
        "untitledSingle",
        "titledSingle",
        "legacyEnum",
        "untitledMulti",
        "titledMulti",
    }

    untitled = properties["untitledSingle"]
    assert untitled["type"] == "string"
    assert untitled["enum"] == ["option1", "option2", "option3"]
    assert "oneOf" not in untitled
    assert "enumNames" not in untitled

    titled = properties["titledSingle"]
    assert titled["type"] == "string"
    assert titled["oneOf"] == [
        {"const": "value1", "title": "First Option"},
        {"const": "value2", "title": "Second Option"},
        {"const": "value3", "title": "Third Option"},
    ]
    assert "enum" not in titled

    legacy = properties["legacyEnum"]
    assert legacy["type"] == "string"
    assert legacy["enum"] == ["opt1", "opt2", "opt3"]
    assert legacy["enumNames"] == ["Option One", "Option Two", "Option Three"]

    untitled_multi = properties["untitledMulti"]
    assert untitled_multi["type"] == "array"
    assert untitled_multi["items"] == {"type": "string", "enum": ["option1", "option2", "option3"]}

    titled_multi = properties["titledMulti"]
    assert titled_multi["type"] == "array"
    assert titled_multi["items"] == {
        "anyOf": [
            {"const": "value1", "title": "First Choice"},
            {"const": "value2", "title": "Second Choice"},
            {"const": "value3", "title": "Third Choice"},
        ]
    }

    jsonschema.validate(ENUMS_ANSWER["content"], schema)
    assert text == (
        'Elicitation completed: action=accept, content={"untitledSingle": "option1", '
        '"titledSingle": "value1", "legacyEnum": "opt1", "untitledMulti": ["option1", '
        '"option2"], "titledMulti": ["value1", "value2"]}'
    )


async def test_elicitation_sep1330_is_not_sent_before_2025_11_25() -> None:
    asked: list[JSONObject] = []
    handler = answering(ENUMS_ANSWER, asked)
    async with connect("2025-06-18", elicitation_handler=handler) as harness:
        text = await harness.text("test_elicitation_sep1330_enums")
    assert asked == []
    assert text == (
        "Elicitation not attempted: multiple-choice enum fields need protocol revision "
        "2025-11-25 or later, this session uses 2025-06-18"
    )


# --- tools: a JSON Schema 2020-12 input schema -------------------------------------------------


@pytest.mark.parametrize("revision", SESSION_REVISIONS)
async def test_json_schema_tool_schema_is_sent_verbatim(revision: str) -> None:
    async with connect(revision) as harness:
        tools = await harness.session.list_tools()
    [tool] = [tool for tool in tools if tool["name"] == "json_schema_2020_12_tool"]
    schema = tool["inputSchema"]
    # Byte for byte, key order included.
    assert json.dumps(schema) == json.dumps(mcpactor_conformance.CONTACT_SCHEMA)
    # What the suite looks for (SEP-1613 and SEP-2106).
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["type"] == "object"
    assert schema["$defs"]["address"]["type"] == "object"
    assert schema["$defs"]["address"]["properties"] == {
        "street": {"type": "string"},
        "city": {"type": "string"},
    }
    assert schema["$defs"]["address"]["$anchor"] == "address"
    assert schema["properties"]["name"] == {"type": "string"}
    assert schema["properties"]["address"] == {"$ref": "#/$defs/address"}
    assert schema["additionalProperties"] is False
    assert schema["allOf"] == [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}]
    assert {"if", "then", "else"} <= schema.keys()


async def test_json_schema_tool_takes_valid_arguments() -> None:
    contact = {
        "name": "Ada",
        "address": {"street": "1 Analytical Way", "city": "London"},
        "contactMethod": "phone",
        "phone": "+44 20 0000 0000",
    }
    async with connect() as harness:
        text = await harness.text("json_schema_2020_12_tool", contact)
    assert text.startswith("Received contact: ")
    assert json.loads(text.removeprefix("Received contact: ")) == contact


@pytest.mark.parametrize(
    ("arguments", "complaint"),
    [
        ({"email": "ada@example.com", "nickname": "A"}, "'nickname' was unexpected"),
        ({"email": "ada@example.com", "address": {"city": 7}}, "/address/city: 7 is not"),
        ({"contactMethod": "phone", "email": "ada@example.com"}, "'phone' is a required"),
        ({"phone": "+44 20 0000 0000"}, "'email' is a required"),
    ],
)
async def test_json_schema_tool_enforces_its_2020_12_schema(
    arguments: JSONObject, complaint: str
) -> None:
    async with connect() as harness:
        result = await harness.call("json_schema_2020_12_tool", arguments)
    assert result["isError"] is True
    assert complaint in result["content"][0]["text"]


# --- tools: reconnection ------------------------------------------------------------------


async def test_reconnection_completes_where_there_is_no_stream_to_close(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connect() as harness:
        text = await harness.text("test_reconnection")
        logged = harness.recorder.sent("notifications/message")
    assert text == "Reconnection test completed"
    assert [m["params"]["data"] for _, m in logged] == ["Before disconnect", "After reconnect"]
    assert logged[1][0] - logged[0][0] == pytest.approx(0.15)


async def test_reconnection_closes_its_stream_mid_call(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Drive a session actor the way the HTTP transport does (with stream signals) and
    # read its outbox: the close comes after the first log message and well before the
    # result, which then waits for the resumed stream.
    outbox_send, outbox_receive = trio.open_memory_channel[Outbound](16)
    inbox_send, inbox_receive = trio.open_memory_channel[JSONValue | ProtocolError](16)
    actor = SessionActor(server, outbox_send, stream_signals=True)
    seen: list[tuple[float, Outbound]] = []
    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            await nursery.start(actor.run, inbox_receive)
            await inbox_send.send(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "suite", "version": "1"},
                    },
                }
            )
            assert (await outbox_receive.receive()).payload["id"] == 1
            await inbox_send.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            await inbox_send.send(
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {"name": "test_reconnection", "arguments": {}},
                }
            )
            async for item in outbox_receive:
                seen.append((trio.current_time(), item))
                if isinstance(item.payload, dict) and item.payload.get("id") == 2:
                    break
            inbox_send.close()
    assert all(item.related_request_id == 2 for _, item in seen)
    kinds = [
        item.signal.value if item.signal is not None else item.payload["params"]["data"]
        for _, item in seen[:-1]
    ]
    assert kinds == ["Before disconnect", "close", "After reconnect"]
    closed_at, answered_at = seen[1][0], seen[-1][0]
    assert answered_at - closed_at == pytest.approx(0.15)
    assert seen[-1][1].payload["result"]["content"] == [
        {"type": "text", "text": "Reconnection test completed"}
    ]


# --- resources ---------------------------------------------------------------------------


async def test_resources_are_listed_with_names_descriptions_and_types() -> None:
    async with connect() as harness:
        resources = await harness.session.list_resources()
        templates = await harness.session.list_resource_templates()
    assert {r["uri"]: r["mimeType"] for r in resources} == {
        "test://static-text": "text/plain",
        "test://static-binary": "image/png",
        "test://watched-resource": "text/plain",
    }
    for resource in resources:
        assert resource["name"]
        assert resource["description"]
    [template] = templates
    assert template["uriTemplate"] == "test://template/{id}/data"
    assert template["mimeType"] == "application/json"
    assert template["name"]
    assert template["description"]


async def test_static_text_resource() -> None:
    async with connect() as harness:
        result = await harness.session.read_resource("test://static-text")
    assert result == {
        "contents": [
            {
                "uri": "test://static-text",
                "mimeType": "text/plain",
                "text": "This is the content of the static text resource.",
            }
        ]
    }


async def test_static_binary_resource_is_a_png() -> None:
    async with connect() as harness:
        result = await harness.session.read_resource("test://static-binary")
    [contents] = result["contents"]
    assert contents["uri"] == "test://static-binary"
    assert contents["mimeType"] == "image/png"
    assert "text" not in contents
    assert_png(base64.b64decode(contents["blob"], validate=True))


@pytest.mark.parametrize("resource_id", ["123", "abc-9"])
async def test_template_resource_carries_its_id(resource_id: str) -> None:
    uri = f"test://template/{resource_id}/data"
    async with connect() as harness:
        result = await harness.session.read_resource(uri)
    [contents] = result["contents"]
    assert contents["uri"] == uri
    assert contents["mimeType"] == "application/json"
    assert resource_id in contents["text"]
    assert json.loads(contents["text"]) == {
        "id": resource_id,
        "templateTest": True,
        "data": f"Data for ID: {resource_id}",
    }


async def test_watched_resource_can_be_subscribed_and_unsubscribed() -> None:
    uri = "test://watched-resource"
    async with connect() as harness:
        session = harness.session
        result = await session.read_resource(uri)
        assert result["contents"] == [
            {"uri": uri, "mimeType": "text/plain", "text": "Watched resource content"}
        ]

        assert await session.subscribe_resource(uri) == {}
        server.notify_resource_updated(uri)
        updated = await session.notifications.wait_for("notifications/resources/updated")
        assert updated.params == {"uri": uri}

        assert await session.unsubscribe_resource(uri) == {}
        server.notify_resource_updated(uri)
        await trio.testing.wait_all_tasks_blocked()
        assert len(harness.recorder.sent("notifications/resources/updated")) == 1


async def test_unknown_resource_is_an_error() -> None:
    async with connect() as harness:
        with pytest.raises(RequestError) as raised:
            await harness.session.read_resource("test://no-such-resource")
    assert raised.value.code == -32002


# --- prompts -----------------------------------------------------------------------------


async def test_prompts_are_listed_with_descriptions_and_arguments() -> None:
    async with connect() as harness:
        prompts = await harness.session.list_prompts()
    by_name = {prompt["name"]: prompt for prompt in prompts}
    assert set(by_name) == {
        "test_simple_prompt",
        "test_prompt_with_arguments",
        "test_prompt_with_embedded_resource",
        "test_prompt_with_image",
        "test_input_required_result_prompt",
    }
    for prompt in prompts:
        assert prompt["description"].strip()
    arguments = {
        name: [(a["name"], a["required"]) for a in prompt.get("arguments", [])]
        for name, prompt in by_name.items()
    }
    assert arguments == {
        "test_simple_prompt": [],
        "test_prompt_with_arguments": [("arg1", True), ("arg2", True)],
        "test_prompt_with_embedded_resource": [("resourceUri", True)],
        "test_prompt_with_image": [],
        "test_input_required_result_prompt": [],
    }


async def test_simple_prompt() -> None:
    async with connect() as harness:
        result = await harness.session.get_prompt("test_simple_prompt")
    assert result["messages"] == [
        {
            "role": "user",
            "content": {"type": "text", "text": "This is a simple prompt for testing."},
        }
    ]


async def test_prompt_with_arguments_substitutes_both() -> None:
    async with connect() as harness:
        result = await harness.session.get_prompt(
            "test_prompt_with_arguments", {"arg1": "testValue1", "arg2": "testValue2"}
        )
    assert result["messages"] == [
        {
            "role": "user",
            "content": {
                "type": "text",
                "text": "Prompt with arguments: arg1='testValue1', arg2='testValue2'",
            },
        }
    ]


async def test_prompt_with_arguments_needs_both() -> None:
    async with connect() as harness:
        with pytest.raises(RequestError) as raised:
            await harness.session.get_prompt("test_prompt_with_arguments", {"arg1": "x"})
    assert raised.value.code == -32602
    assert raised.value.data == {"missing": ["arg2"]}


async def test_prompt_with_embedded_resource() -> None:
    async with connect() as harness:
        result = await harness.session.get_prompt(
            "test_prompt_with_embedded_resource", {"resourceUri": "test://example-resource"}
        )
    assert result["messages"] == [
        {
            "role": "user",
            "content": {
                "type": "resource",
                "resource": {
                    "uri": "test://example-resource",
                    "mimeType": "text/plain",
                    "text": "Embedded resource content for testing.",
                },
            },
        },
        {
            "role": "user",
            "content": {"type": "text", "text": "Please process the embedded resource above."},
        },
    ]


async def test_prompt_with_image() -> None:
    async with connect() as harness:
        result = await harness.session.get_prompt("test_prompt_with_image")
    image, text = result["messages"]
    assert image["role"] == "user"
    assert image["content"]["type"] == "image"
    assert image["content"]["mimeType"] == "image/png"
    assert_png(base64.b64decode(image["content"]["data"], validate=True))
    assert text == {
        "role": "user",
        "content": {"type": "text", "text": "Please analyze the image above."},
    }


# --- completion ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argument", "value", "values"),
    [
        # The suite's request.
        ("arg1", "test", ["testValue1", "testValue2", "testValue3"]),
        ("arg2", "testValue2", ["testValue2"]),
        ("arg1", "", ["testValue1", "testValue2", "testValue3"]),
        # Anything else completes to nothing, and is no error.
        ("arg1", "zzz", []),
    ],
)
async def test_completion_of_prompt_arguments(
    argument: str, value: str, values: list[str]
) -> None:
    async with connect() as harness:
        result = await harness.session.complete(
            {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
            {"name": argument, "value": value},
        )
    assert result == {"completion": {"values": values, "total": len(values), "hasMore": False}}


# --- everything, at every revision ----------------------------------------------------------


@pytest.mark.parametrize("revision", SESSION_REVISIONS)
async def test_every_fixture_answers_at_every_revision(
    revision: str, autojump_clock: trio.testing.MockClock
) -> None:
    # Inside the repository every message is checked against the revision's schema.
    sampling = answering(SAMPLING_ANSWER, [])
    elicitation = answering(ELICITATION_ANSWER, [])
    arguments: dict[str, JSONObject] = {
        "test_sampling": {"prompt": "hello"},
        "test_elicitation": {"message": "Who are you?"},
        "json_schema_2020_12_tool": {"email": "ada@example.com"},
    }
    async with connect(
        revision, sampling_handler=sampling, elicitation_handler=elicitation
    ) as harness:
        session = harness.session
        await session.set_logging_level("debug")
        for name in sorted(TOOLS):
            result = await session.call_tool(
                name, arguments.get(name), meta={"progressToken": f"token-{name}"}
            )
            assert result["content"], name
            assert result.get("isError", False) is (name == "test_error_handling"), name
        for uri in ("test://static-text", "test://static-binary", "test://watched-resource"):
            assert (await session.read_resource(uri))["contents"]
        assert (await session.read_resource("test://template/1/data"))["contents"]
        for name, prompt_arguments in [
            ("test_simple_prompt", None),
            ("test_prompt_with_arguments", {"arg1": "a", "arg2": "b"}),
            ("test_prompt_with_embedded_resource", {"resourceUri": "test://x"}),
            ("test_prompt_with_image", None),
        ]:
            assert (await session.get_prompt(name, prompt_arguments))["messages"]
        if "completions" in session.server.capabilities:
            await session.complete(
                {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                {"name": "arg1", "value": "t"},
            )
    assert len(harness.recorder.sent("notifications/progress")) == 3
