"""``completion/complete``: registered completers, automatic choices, limits, errors."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Literal

import pytest

from mcpactor import Completion, Context, SchemaError
from mcpactor.server import Server

from .conftest import FakePeer, call, call_error


class Region(enum.Enum):
    EU_WEST = "eu-west"
    EU_NORTH = "eu-north"
    US_EAST = "us-east"


LANGUAGES = ["go", "haskell", "python", "pascal", "perl"]


def _server(calls: list[tuple[Any, ...]]) -> Server:
    server = Server("s")

    @server.prompt
    def deploy(
        service: str, region: Region, size: Literal["small", "large"] = "small", language: str = ""
    ) -> str:
        return service

    @server.resource("repo://{owner}/{name}")
    def repo(owner: str, name: str) -> str:
        return f"{owner}/{name}"

    @server.completion("deploy", "language")
    def languages(value: str, context: Mapping[str, str]) -> list[str]:
        calls.append(("language", value, dict(context)))
        return [language for language in LANGUAGES if language.startswith(value)]

    @server.completion("deploy", "service")
    async def services(value: str, context: Mapping[str, str], ctx: Context) -> Completion:
        calls.append(("service", value, ctx.protocol_version))
        return Completion(values=["api", "web"], total=7, has_more=True)

    @server.completion("repo://{owner}/{name}", "name")
    async def names(value: str, context: Mapping[str, str]) -> list[str]:
        calls.append(("name", value, dict(context)))
        owner = context.get("owner", "")
        return [f"{owner}-tools", f"{owner}-docs"]

    return server


def _params(ref: dict[str, str], name: str, value: str, **extra: Any) -> dict[str, Any]:
    return {"ref": ref, "argument": {"name": name, "value": value}, **extra}


PROMPT = {"type": "ref/prompt", "name": "deploy"}
TEMPLATE = {"type": "ref/resource", "uri": "repo://{owner}/{name}"}


async def test_prompt_argument_completer(any_revision: str) -> None:
    calls: list[tuple[Any, ...]] = []
    peer = FakePeer()
    result = await call(
        _server(calls),
        "completion/complete",
        _params(PROMPT, "language", "p"),
        revision=any_revision,
        peer=peer,
    )
    assert result == {
        "completion": {"values": ["python", "pascal", "perl"], "total": 3, "hasMore": False}
    }
    assert calls == [("language", "p", {})]
    # A plain function completer runs in a worker thread like any sync handler.
    assert peer.thread_calls == 1


async def test_completer_receives_context_arguments() -> None:
    calls: list[tuple[Any, ...]] = []
    result = await call(
        _server(calls),
        "completion/complete",
        _params(TEMPLATE, "name", "", context={"arguments": {"owner": "trio"}}),
        revision="2025-06-18",
    )
    assert result["completion"]["values"] == ["trio-tools", "trio-docs"]
    assert calls == [("name", "", {"owner": "trio"})]


async def test_completer_with_context_parameter_returns_completion() -> None:
    calls: list[tuple[Any, ...]] = []
    peer = FakePeer()
    result = await call(
        _server(calls),
        "completion/complete",
        _params(PROMPT, "service", "a"),
        revision="2025-03-26",
        peer=peer,
    )
    assert result == {"completion": {"values": ["api", "web"], "total": 7, "hasMore": True}}
    assert calls == [("service", "a", "2025-03-26")]
    assert peer.thread_calls == 0


@pytest.mark.parametrize(
    ("argument", "value", "values"),
    [
        ("region", "eu", ["eu-west", "eu-north"]),
        ("region", "us-", ["us-east"]),
        ("region", "", ["eu-west", "eu-north", "us-east"]),
        ("region", "ap", []),
        ("size", "l", ["large"]),
        # No completer and no choices: nothing to suggest, not an error.
        ("service_name", "x", []),
    ],
)
async def test_enum_and_literal_arguments_complete_by_prefix(
    argument: str, value: str, values: list[str]
) -> None:
    server = Server("s")

    @server.prompt
    def deploy(region: Region, size: Literal["small", "large"] = "small") -> str:
        return ""

    result = await call(server, "completion/complete", _params(PROMPT, argument, value))
    assert result == {"completion": {"values": values, "total": len(values), "hasMore": False}}


async def test_template_argument_without_completer_is_empty() -> None:
    result = await call(_server([]), "completion/complete", _params(TEMPLATE, "owner", "t"))
    assert result == {"completion": {"values": [], "total": 0, "hasMore": False}}


@pytest.mark.parametrize(
    ("answer", "total", "has_more"),
    [
        ([f"v{i}" for i in range(150)], 150, True),
        (Completion(values=[f"v{i}" for i in range(150)]), 150, True),
        (Completion(values=[f"v{i}" for i in range(101)], total=5000), 5000, True),
        # A total smaller than what was returned cannot be right.
        (Completion(values=[f"v{i}" for i in range(120)], total=3), 120, True),
        ([f"v{i}" for i in range(100)], 100, False),
    ],
)
async def test_more_than_100_values_are_truncated(answer: Any, total: int, has_more: bool) -> None:
    server = Server("s")
    server.add_prompt(lambda word="": word, name="p")

    @server.completion("p", "word")
    async def many(value: str, context: Mapping[str, str]) -> Any:
        return answer

    result = await call(
        server, "completion/complete", _params({"type": "ref/prompt", "name": "p"}, "word", "")
    )
    completion = result["completion"]
    assert len(completion["values"]) == 100
    assert completion["values"][:2] == ["v0", "v1"]
    assert completion["total"] == total
    assert completion["hasMore"] is has_more


async def test_completion_values_are_strings() -> None:
    server = Server("s")
    server.add_prompt(lambda n="": n, name="p")

    @server.completion("p", "n")
    def numbers(value: str, context: Mapping[str, str]) -> list[int]:
        return [1, 2]

    result = await call(
        server, "completion/complete", _params({"type": "ref/prompt", "name": "p"}, "n", "")
    )
    assert result["completion"]["values"] == ["1", "2"]


@pytest.mark.parametrize(
    ("ref", "data"),
    [
        ({"type": "ref/prompt", "name": "nope"}, {"name": "nope"}),
        ({"type": "ref/resource", "uri": "repo://{other}"}, {"uri": "repo://{other}"}),
        ({"type": "ref/tool", "name": "deploy"}, None),
    ],
)
async def test_unknown_reference_is_invalid_params(
    ref: dict[str, str], data: Any, any_revision: str
) -> None:
    error = await call_error(
        _server([]), "completion/complete", _params(ref, "x", ""), revision=any_revision
    )
    assert error.code == -32602
    assert error.data == data


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"ref": PROMPT},
        {"argument": {"name": "x", "value": ""}},
        {"ref": "deploy", "argument": {"name": "x", "value": ""}},
        {"ref": PROMPT, "argument": {"name": 1, "value": ""}},
        {"ref": PROMPT, "argument": {"name": "x", "value": 1}},
        {"ref": {"type": "ref/prompt"}, "argument": {"name": "x", "value": ""}},
    ],
)
async def test_malformed_completion_request_is_invalid_params(params: dict[str, Any]) -> None:
    error = await call_error(_server([]), "completion/complete", params)
    assert error.code == -32602


async def test_completion_without_prompts_or_templates_is_method_not_found() -> None:
    server = Server("s")
    server.add_tool(lambda: None, name="t")
    server.add_resource(lambda: "", "memo://static")
    error = await call_error(
        server,
        "completion/complete",
        _params({"type": "ref/resource", "uri": "memo://static"}, "x", ""),
    )
    assert error.code == -32601


def test_completer_signature_is_read_at_registration() -> None:
    server = Server("s")
    server.add_prompt(lambda word="": word, name="p")

    def bad(value: str, *context: str) -> list[str]:
        return []

    with pytest.raises(SchemaError, match=r"\*context"):
        server.completion("p", "word")(bad)
