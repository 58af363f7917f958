"""Multi round-trip requests in the server: ctx.elicit/sample/list_roots across retries."""

from __future__ import annotations

from typing import Any

import attrs
import orjson
import pytest

from mcpactor import RequestError
from mcpactor._exceptions import CapabilityError, LocalProtocolError
from mcpactor.protocol import SERVER_INFO, Request, error_message_for
from mcpactor.protocol._envelope import read_envelope
from mcpactor.protocol._mrtr import elicitation_request, roots_request
from mcpactor.protocol._sealing import KeyRing, SealingKey, StateRefused, StateSealer
from mcpactor.server import Context, Server
from mcpactor.server._rounds import InputRequired
from mcpactor.server._stateless import serve_stateless
from tests.spec_schema import RESULT_TYPES, check

from .conftest import FakePeer, make_context

MODERN = "2026-07-28"
EVERYTHING = {"elicitation": {"form": {}}, "sampling": {}, "roots": {}}
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
KEY = SealingKey.generate("k1")
NOW = 1_800_000_000.0


def sealer() -> StateSealer:
    # a fresh sealer per round: nothing but the key is shared between rounds
    return StateSealer(KeyRing.of(KEY), ttl=60)


def params_of(method: str, body: dict[str, Any], caps: dict[str, Any] | None) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": EVERYTHING if caps is None else caps,
    }
    return {"_meta": meta, **body}


async def serve(
    server: Server,
    method: str,
    body: dict[str, Any],
    *,
    caps: dict[str, Any] | None = None,
    now: float = NOW,
    principal: str | None = None,
    with_sealer: bool = True,
) -> Any:
    params = params_of(method, body, caps)
    envelope = read_envelope(Request(1, method, params))
    ctx = Context(
        peer=FakePeer(), request_id=1, negotiated=envelope, meta=params["_meta"], server=server
    )
    result = await serve_stateless(
        server,
        method,
        params,
        ctx,
        sealer=sealer() if with_sealer else None,
        now=now,
        principal=principal,
    )
    assert orjson.loads(orjson.dumps(result)) == result
    check({"jsonrpc": "2.0", "id": 1, "result": result}, MODERN, "JSONRPCResultResponse")
    if result["resultType"] == "input_required":
        check(result, MODERN, "InputRequiredResult")
        assert "ttlMs" not in result
    else:
        check(result, MODERN, RESULT_TYPES[method])
    assert SERVER_INFO in result["_meta"]
    return result


def retry(body: dict[str, Any], asked: dict[str, Any], answers: dict[str, Any]) -> dict[str, Any]:
    """The client's retry: the same request, the answers by key, the state echoed."""
    assert set(answers) == set(asked["inputRequests"])
    return {**body, "inputResponses": answers, "requestState": asked["requestState"]}


@attrs.define
class Booking:
    """A tool that asks twice: the work before each question runs again on each round."""

    runs: int = 0

    def server(self) -> Server:
        server = Server("travel")

        @server.tool
        async def book(city: str, ctx: Context) -> str:
            self.runs += 1
            who = await ctx.elicit(f"Who travels to {city}?", NAME)
            if who.action != "accept" or who.content is None:
                return "cancelled"
            roots = await ctx.list_roots()
            return f"{who.content['name']} to {city}, files in {roots[0].uri}"

        return server


async def test_a_handler_asks_across_rounds_with_only_the_key_shared() -> None:
    booking = Booking()
    server = booking.server()
    body = {"name": "book", "arguments": {"city": "Oslo"}}
    first = await serve(server, "tools/call", body)
    assert list(first["inputRequests"]) == ["1:elicitation/create"]
    question = first["inputRequests"]["1:elicitation/create"]
    assert question == elicitation_request("Who travels to Oslo?", NAME)
    # round two: the elicitation answered; the handler now asks for roots
    body2 = retry(
        body, first, {"1:elicitation/create": {"action": "accept", "content": {"name": "Ada"}}}
    )
    second = await serve(server, "tools/call", body2)
    assert second["inputRequests"] == {"2:roots/list": {"method": "roots/list", "params": {}}}
    check(second["inputRequests"]["2:roots/list"], MODERN, "ListRootsRequest")
    # round three carries only the roots answer: the first answer is in the state
    body3 = retry(body, second, {"2:roots/list": {"roots": [{"uri": "file:///trips"}]}})
    done = await serve(server, "tools/call", body3)
    assert done["resultType"] == "complete"
    assert done["content"] == [{"type": "text", "text": "Ada to Oslo, files in file:///trips"}]
    assert booking.runs == 3


async def test_a_missing_answer_is_asked_again() -> None:
    server = Booking().server()
    body = {"name": "book", "arguments": {"city": "Oslo"}}
    first = await serve(server, "tools/call", body)
    again = await serve(server, "tools/call", {**body, "requestState": first["requestState"]})
    assert list(again["inputRequests"]) == ["1:elicitation/create"]


async def test_a_declined_question_finishes_the_call() -> None:
    server = Booking().server()
    body = {"name": "book", "arguments": {"city": "Oslo"}}
    first = await serve(server, "tools/call", body)
    done = await serve(
        server, "tools/call", retry(body, first, {"1:elicitation/create": {"action": "decline"}})
    )
    assert done["content"][0]["text"] == "cancelled"


# --- the state is refused when it does not belong ---------------------------------------


async def first_round(principal: str | None = None) -> tuple[Server, dict[str, Any], Any]:
    server = Booking().server()
    body = {"name": "book", "arguments": {"city": "Oslo"}}
    return server, body, await serve(server, "tools/call", body, principal=principal)


async def test_a_forged_state_is_refused() -> None:
    server, body, _ = await first_round()
    other = StateSealer(KeyRing.of(SealingKey.generate("k1")))
    forged = other.seal({"answers": {}}, method="tools/call", params=body, now=NOW)
    with pytest.raises(StateRefused) as info:
        await serve(server, "tools/call", {**body, "requestState": forged})
    assert info.value.reason == "not_authentic"
    assert info.value.code == -32602


async def test_an_expired_state_is_refused() -> None:
    server, body, first = await first_round()
    with pytest.raises(StateRefused) as info:
        await serve(
            server, "tools/call", {**body, "requestState": first["requestState"]}, now=NOW + 61
        )
    assert info.value.reason == "expired"


async def test_a_state_for_other_arguments_is_refused() -> None:
    server, _, first = await first_round()
    other = {"name": "book", "arguments": {"city": "Rome"}, "requestState": first["requestState"]}
    with pytest.raises(StateRefused) as info:
        await serve(server, "tools/call", other)
    assert info.value.reason == "wrong_request"


async def test_a_state_for_another_principal_is_refused() -> None:
    server, body, first = await first_round(principal="alice")
    state = {**body, "requestState": first["requestState"]}
    with pytest.raises(StateRefused) as info:
        await serve(server, "tools/call", state, principal="mallory")
    assert info.value.reason == "wrong_principal"
    again = await serve(server, "tools/call", state, principal="alice")
    assert again["resultType"] == "input_required"


async def test_without_a_sealer_nothing_is_asked_or_opened() -> None:
    server, body, first = await first_round()
    with pytest.raises(LocalProtocolError, match="StateSealer"):
        await serve(server, "tools/call", body, with_sealer=False)
    with pytest.raises(StateRefused) as info:
        await serve(
            server,
            "tools/call",
            {**body, "requestState": first["requestState"]},
            with_sealer=False,
        )
    assert info.value.reason == "unknown_key"


# --- capabilities -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("caps", "required"),
    [
        ({}, {"elicitation": {"form": {}}}),
        ({"elicitation": {"url": {}}}, {"elicitation": {"form": {}}}),
    ],
)
async def test_only_what_the_client_declared_is_asked(
    caps: dict[str, Any], required: dict[str, Any]
) -> None:
    server = Booking().server()
    with pytest.raises(CapabilityError) as info:
        await serve(
            server, "tools/call", {"name": "book", "arguments": {"city": "Oslo"}}, caps=caps
        )
    assert info.value.code == -32021
    assert info.value.data == {"requiredCapabilities": required}
    check(error_message_for(info.value), MODERN, "MissingRequiredClientCapabilityError")


async def test_sampling_is_asked_as_a_create_message_request() -> None:
    server = Server("s")

    @server.tool
    async def capital(ctx: Context) -> str:
        answer = await ctx.sample("Capital of France?", max_tokens=10)
        return str(answer.content.text)  # type: ignore[union-attr]

    first = await serve(server, "tools/call", {"name": "capital", "arguments": {}})
    (key,) = first["inputRequests"]
    assert key == "1:sampling/createMessage"
    check(first["inputRequests"][key], MODERN, "CreateMessageRequest")
    body = {"name": "capital", "arguments": {}}
    answer = {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}
    done = await serve(server, "tools/call", retry(body, first, {key: answer}))
    assert done["content"][0]["text"] == "Paris"
    with pytest.raises(CapabilityError) as info:
        await serve(server, "tools/call", body, caps={"roots": {}})
    assert info.value.data == {"requiredCapabilities": {"sampling": {}}}


# --- the explicit API ---------------------------------------------------------------------


async def test_a_handler_may_run_the_rounds_itself() -> None:
    server = Server("s")
    seen: list[tuple[dict[str, Any], Any]] = []

    @server.tool
    async def deploy(env: str, ctx: Context) -> Any:
        seen.append((dict(ctx.input_responses), ctx.request_state))
        answer = ctx.input_responses.get("confirm")
        if answer is None:
            return InputRequired(
                {"confirm": elicitation_request(f"Deploy to {env}?", NAME)}, state={"step": 1}
            )
        return f"deployed by {answer['content']['name']}"

    body = {"name": "deploy", "arguments": {"env": "prod"}}
    first = await serve(server, "tools/call", body)
    assert list(first["inputRequests"]) == ["confirm"]
    done = await serve(
        server,
        "tools/call",
        retry(body, first, {"confirm": {"action": "accept", "content": {"name": "Ada"}}}),
    )
    assert done["content"][0]["text"] == "deployed by Ada"
    assert seen == [
        ({}, None),
        ({"confirm": {"action": "accept", "content": {"name": "Ada"}}}, {"step": 1}),
    ]


async def test_prompts_and_resources_may_ask_too() -> None:
    server = Server("s")

    @server.prompt
    async def greet(ctx: Context) -> str:
        roots = await ctx.list_roots()
        return f"hello {roots[0].uri}"

    @server.resource("data://who")
    async def who(ctx: Context) -> Any:
        if "who" not in ctx.input_responses:
            return InputRequired({"who": roots_request()})
        return ctx.input_responses["who"]["roots"][0]["uri"]

    first = await serve(server, "prompts/get", {"name": "greet"})
    done = await serve(
        server,
        "prompts/get",
        retry({"name": "greet"}, first, {"1:roots/list": {"roots": [{"uri": "file:///a"}]}}),
    )
    assert done["messages"][0]["content"]["text"] == "hello file:///a"
    asked = await serve(server, "resources/read", {"uri": "data://who"})
    assert "requestState" in asked
    read = await serve(
        server,
        "resources/read",
        retry({"uri": "data://who"}, asked, {"who": {"roots": [{"uri": "file:///b"}]}}),
    )
    assert read["contents"][0]["text"] == "file:///b"
    assert read["resultType"] == "complete"
    assert "ttlMs" in read


async def test_a_mounted_servers_handler_asks_in_the_same_round() -> None:
    parent = Server("parent")
    parent.mount(Booking().server(), "travel")
    body = {"name": "travel_book", "arguments": {"city": "Oslo"}}
    first = await serve(parent, "tools/call", body)
    second = await serve(
        parent,
        "tools/call",
        retry(
            body, first, {"1:elicitation/create": {"action": "accept", "content": {"name": "Ada"}}}
        ),
    )
    assert list(second["inputRequests"]) == ["2:roots/list"]


# --- the session era is unchanged ---------------------------------------------------------


async def test_in_a_session_the_question_is_a_request() -> None:
    server = Booking().server()
    ctx = make_context("2025-11-25", capabilities=EVERYTHING, server=server)
    # the question went to the peer as elicitation/create; the fake one answers none
    with pytest.raises(RequestError, match="answers no requests \\('elicitation/create'\\)"):
        await server.handle_request(
            "tools/call", {"name": "book", "arguments": {"city": "Oslo"}}, ctx
        )
    assert ctx.input_responses == {}
    assert ctx.request_state is None


async def test_returning_input_required_in_a_session_is_an_error() -> None:
    server = Server("s")

    @server.resource("data://x")
    async def x() -> Any:
        return InputRequired({"k": roots_request()})

    with pytest.raises(LocalProtocolError, match="no multi round-trip"):
        await server.handle_request(
            "resources/read", {"uri": "data://x"}, make_context("2025-11-25")
        )


async def test_asking_where_input_required_is_not_allowed_fails() -> None:
    server = Server("s")

    @server.prompt
    def p(arg: str) -> str:
        return arg

    @server.completion("p", "arg")
    async def complete(value: str, context: dict[str, str], ctx: Context) -> list[str]:
        await ctx.list_roots()
        return []

    with pytest.raises((LocalProtocolError, RequestError), match="input_required"):
        await serve(
            server,
            "completion/complete",
            {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "arg", "value": ""}},
        )
