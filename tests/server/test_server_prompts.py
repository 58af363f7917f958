"""Prompts: arguments from signatures, ``prompts/list`` per revision, ``prompts/get``."""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

import pytest

from mcpactor import (
    AudioContent,
    Context,
    EmbeddedResource,
    GetPromptResult,
    Icon,
    ImageContent,
    PromptMessage,
    RequestError,
    ResourceLink,
    SchemaError,
    TextContent,
    TextResourceContents,
)
from mcpactor.server import Server

from .conftest import ALL_REVISIONS, FakePeer, RecordingListener, call, call_error


class Tone(enum.Enum):
    FORMAL = "formal"
    CASUAL = "casual"


def _review_server(calls: list[dict[str, Any]]) -> Server:
    server = Server("s")

    @server.prompt
    def review(
        code: Annotated[str, "the code to review"],
        language: str,
        tone: Tone = Tone.FORMAL,
        max_comments: int = 5,
        focus: Literal["bugs", "style"] | None = None,
    ) -> str:
        """Review a piece of code.

        Args:
            language: the programming language of the code
        """
        calls.append(
            {
                "code": code,
                "language": language,
                "tone": tone,
                "max_comments": max_comments,
                "focus": focus,
            }
        )
        return f"Review this {language} code ({tone.value}): {code}"

    return server


# --- listing ------------------------------------------------------------------------------


async def test_prompt_arguments_come_from_the_signature() -> None:
    result = await call(_review_server([]), "prompts/list", revision="2025-11-25")
    [prompt] = result["prompts"]
    assert prompt["name"] == "review"
    assert prompt["description"] == "Review a piece of code."
    arguments = {argument["name"]: argument for argument in prompt["arguments"]}
    assert list(arguments) == ["code", "language", "tone", "max_comments", "focus"]
    assert arguments["code"] == {
        "name": "code",
        "description": "the code to review",
        "required": True,
    }
    assert arguments["language"] == {
        "name": "language",
        "description": "the programming language of the code",
        "required": True,
    }
    assert arguments["tone"]["required"] is False
    assert arguments["max_comments"] == {"name": "max_comments", "required": False}
    assert arguments["focus"]["required"] is False


async def test_prompt_without_parameters_lists_no_arguments() -> None:
    server = Server("s")

    @server.prompt()
    async def hello() -> str:
        return "hello"

    result = await call(server, "prompts/list")
    assert result["prompts"] == [{"name": "hello"}]


def _described_server() -> Server:
    server = Server("s")

    @server.prompt(
        "summarise",
        title="Summarise a text",
        description="Summarise in one paragraph.",
        icons=[Icon(src="https://example.com/s.svg", mime_type="image/svg+xml")],
        meta={"example.com/tag": "x"},
    )
    def anything(text: str, tone: Tone = Tone.CASUAL) -> str:
        return text

    return server


@pytest.mark.parametrize(
    ("revision", "fields"),
    [
        ("2024-11-05", {"name", "description", "arguments"}),
        ("2025-03-26", {"name", "description", "arguments"}),
        ("2025-06-18", {"name", "title", "description", "arguments", "_meta"}),
        ("2025-11-25", {"name", "title", "description", "arguments", "icons", "_meta"}),
    ],
)
async def test_prompt_definition_pruned_to_the_revision(revision: str, fields: set[str]) -> None:
    result = await call(_described_server(), "prompts/list", revision=revision)
    [prompt] = result["prompts"]
    assert set(prompt) == fields
    assert prompt["name"] == "summarise"
    # PromptArgument has no title before 2025-06-18 either (the Enum's title was leaking).
    argument_keys = set().union(*(argument.keys() for argument in prompt["arguments"]))
    assert ("title" in argument_keys) is (revision >= "2025-06-18")


def test_prompt_duplicate_name_is_refused() -> None:
    server = Server("s")
    server.add_prompt(lambda: "a", name="p")
    with pytest.raises(SchemaError, match="prompt 'p' is already registered"):
        server.add_prompt(lambda: "b", name="p")


async def test_prompt_remove() -> None:
    server = _described_server()
    listener = RecordingListener()
    server.listeners.add(listener)
    server.remove_prompt("summarise")
    assert listener.changes == ["prompts"]
    error = await call_error(server, "prompts/list")
    assert error.code == -32601
    with pytest.raises(KeyError):
        server.remove_prompt("summarise")


# --- getting: arguments --------------------------------------------------------------------


async def test_prompt_get_coerces_arguments(any_revision: str) -> None:
    calls: list[dict[str, Any]] = []
    result = await call(
        _review_server(calls),
        "prompts/get",
        {
            "name": "review",
            "arguments": {
                "code": "x = 1",
                "language": "python",
                "tone": "casual",
                "max_comments": "3",
                "focus": "bugs",
            },
        },
        revision=any_revision,
    )
    assert calls == [
        {
            "code": "x = 1",
            "language": "python",
            "tone": Tone.CASUAL,
            "max_comments": 3,
            "focus": "bugs",
        }
    ]
    assert result == {
        "description": "Review a piece of code.",
        "messages": [
            {
                "role": "user",
                "content": {"type": "text", "text": "Review this python code (casual): x = 1"},
            }
        ],
    }


async def test_prompt_optional_typed_arguments_are_coerced() -> None:
    server = Server("s")
    seen: list[Any] = []

    @server.prompt
    def page(
        number: int | None = None, ratio: float | None = None, tone: Tone | None = None
    ) -> str:
        seen.append((number, ratio, tone))
        return ""

    await call(
        server,
        "prompts/get",
        {"name": "page", "arguments": {"number": "7", "ratio": "0.5", "tone": "formal"}},
    )
    await call(server, "prompts/get", {"name": "page"})
    assert seen == [(7, 0.5, Tone.FORMAL), (None, None, None)]


async def test_prompt_get_optional_arguments_use_defaults() -> None:
    calls: list[dict[str, Any]] = []
    await call(
        _review_server(calls),
        "prompts/get",
        {"name": "review", "arguments": {"code": "c", "language": "go"}},
    )
    assert calls == [
        {"code": "c", "language": "go", "tone": Tone.FORMAL, "max_comments": 5, "focus": None}
    ]


async def test_prompt_get_missing_required_argument(any_revision: str) -> None:
    calls: list[dict[str, Any]] = []
    error = await call_error(
        _review_server(calls),
        "prompts/get",
        {"name": "review", "arguments": {"language": "go"}},
        revision=any_revision,
    )
    assert error.code == -32602
    assert error.data == {"missing": ["code"]}
    assert calls == []
    error = await call_error(_review_server(calls), "prompts/get", {"name": "review"})
    assert error.data == {"missing": ["code", "language"]}


async def test_prompt_get_unknown_argument() -> None:
    calls: list[dict[str, Any]] = []
    error = await call_error(
        _review_server(calls),
        "prompts/get",
        {"name": "review", "arguments": {"code": "c", "language": "go", "colour": "red"}},
    )
    assert error.code == -32602
    assert error.data == {"unknown": ["colour"]}
    assert calls == []


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"max_comments": "many"}, {"argument": "max_comments", "value": "many"}),
        (
            {"tone": "rude"},
            {
                "errors": [
                    {"path": "/tone", "message": "'rude' is not one of ['formal', 'casual']"}
                ]
            },
        ),
        (
            {"focus": "speed"},
            {
                "errors": [
                    {
                        "path": "/focus",
                        "message": "'speed' is not valid under any of the given schemas",
                    }
                ]
            },
        ),
    ],
)
async def test_prompt_get_bad_argument_value(arguments: dict[str, str], expected: Any) -> None:
    calls: list[dict[str, Any]] = []
    error = await call_error(
        _review_server(calls),
        "prompts/get",
        {"name": "review", "arguments": {"code": "c", "language": "go", **arguments}},
    )
    assert error.code == -32602
    assert error.data == expected
    assert calls == []


@pytest.mark.parametrize("arguments", [["code"], {"code": 1, "language": "go"}, "code=1"])
async def test_prompt_get_arguments_must_map_names_to_strings(arguments: Any) -> None:
    error = await call_error(
        _review_server([]), "prompts/get", {"name": "review", "arguments": arguments}
    )
    assert error.code == -32602
    assert "'arguments' must map names to strings" in error.message


@pytest.mark.parametrize("name", ["nope", None, 3])
async def test_prompt_get_unknown_prompt(name: Any) -> None:
    params = {} if name is None else {"name": name}
    error = await call_error(_review_server([]), "prompts/get", params)
    assert error.code == -32602
    assert error.data == {"name": name}


async def test_prompt_handler_gets_context_and_runs_sync_in_thread() -> None:
    server = Server("s")
    seen: list[Context] = []

    @server.prompt
    def greet(name: str, ctx: Context) -> str:
        seen.append(ctx)
        return f"Hello {name}"

    peer = FakePeer()
    await call(server, "prompts/get", {"name": "greet", "arguments": {"name": "Ada"}}, peer=peer)
    assert peer.thread_calls == 1
    assert len(seen) == 1
    assert seen[0].server is server
    listed = await call(server, "prompts/list")
    assert [a["name"] for a in listed["prompts"][0]["arguments"]] == ["name"]


async def test_prompt_handler_request_error_propagates() -> None:
    server = Server("s")

    @server.prompt
    async def guarded() -> str:
        raise RequestError(-32602, "not today")

    error = await call_error(server, "prompts/get", {"name": "guarded"})
    assert (error.code, error.message) == (-32602, "not today")


# --- getting: results ----------------------------------------------------------------------

_TEXT_RESOURCE = TextResourceContents(uri="notes://1", text="note", mime_type="text/plain")


@pytest.mark.parametrize(
    ("value", "messages"),
    [
        ("hi", [{"role": "user", "content": {"type": "text", "text": "hi"}}]),
        (
            ["one", "two"],
            [
                {"role": "user", "content": {"type": "text", "text": "one"}},
                {"role": "user", "content": {"type": "text", "text": "two"}},
            ],
        ),
        (
            [TextContent(text="look"), ImageContent(data="AAAA", mime_type="image/png")],
            [
                {"role": "user", "content": {"type": "text", "text": "look"}},
                {
                    "role": "user",
                    "content": {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                },
            ],
        ),
        (
            PromptMessage(role="assistant", content=TextContent(text="Sure.")),
            [{"role": "assistant", "content": {"type": "text", "text": "Sure."}}],
        ),
        (
            [
                {"role": "user", "content": "Question?"},
                {"role": "assistant", "content": {"type": "text", "text": "Answer."}},
                {"role": "user", "content": EmbeddedResource(resource=_TEXT_RESOURCE)},
            ],
            [
                {"role": "user", "content": {"type": "text", "text": "Question?"}},
                {"role": "assistant", "content": {"type": "text", "text": "Answer."}},
                {
                    "role": "user",
                    "content": {
                        "type": "resource",
                        "resource": {"uri": "notes://1", "text": "note", "mimeType": "text/plain"},
                    },
                },
            ],
        ),
    ],
)
async def test_prompt_return_values(value: Any, messages: list[Any], any_revision: str) -> None:
    server = Server("s")
    server.add_prompt(lambda: value, name="p")
    result = await call(server, "prompts/get", {"name": "p"}, revision=any_revision)
    assert result == {"messages": messages}


async def test_prompt_get_prompt_result_keeps_its_fields() -> None:
    server = Server("s")

    @server.prompt
    def full() -> GetPromptResult:
        """Fallback description."""
        return GetPromptResult(
            messages=[PromptMessage(role="user", content=TextContent(text="x"))],
            description="Given description.",
            meta={"example.com/k": 1},
        )

    @server.prompt
    def bare() -> GetPromptResult:
        """Docstring description."""
        return GetPromptResult(messages=[])

    result = await call(server, "prompts/get", {"name": "full"})
    assert result == {
        "messages": [{"role": "user", "content": {"type": "text", "text": "x"}}],
        "description": "Given description.",
        "_meta": {"example.com/k": 1},
    }
    result = await call(server, "prompts/get", {"name": "bare"})
    assert result == {"messages": [], "description": "Docstring description."}


_AUDIO = AudioContent(data="UklGRg==", mime_type="audio/wav")
_LINK = ResourceLink(uri="notes://2", name="second")


@pytest.mark.parametrize("revision", ALL_REVISIONS)
async def test_prompt_content_adapted_to_revision(revision: str) -> None:
    server = Server("s")
    server.add_prompt(
        lambda: [
            PromptMessage(role="user", content=_AUDIO),
            PromptMessage(role="assistant", content=_LINK),
        ],
        name="media",
    )
    result = await call(server, "prompts/get", {"name": "media"}, revision=revision)
    audio, link = (message["content"] for message in result["messages"])
    if revision == "2024-11-05":
        assert audio == {
            "type": "text",
            "text": "[audio/wav audio: this client's protocol revision 2024-11-05 "
            "cannot carry audio content]",
        }
    else:
        assert audio == {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}
    if revision < "2025-06-18":
        assert link == {"type": "text", "text": "resource: notes://2 (second)"}
    else:
        assert link == {"type": "resource_link", "uri": "notes://2", "name": "second"}
    assert [message["role"] for message in result["messages"]] == ["user", "assistant"]
