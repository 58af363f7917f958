"""What the transport fuzz tests send: arbitrary JSON in every position of a message.

``hostile_messages`` builds one client message around a hole filled with any JSON value
(at any depth the framer accepts, and some deeper); ``client_answers`` builds the
client's answer to a server→client request the same way. ``fuzz_server`` is the server
they talk to: tools whose arguments, results and server→client requests carry those
values back and forth.
"""

from __future__ import annotations

import os
from typing import Any, Final

import trio
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from mcpactor import Context, Server
from mcpactor.protocol import MAX_DEPTH, exceeds_depth

#: a few seconds a test on two shared cores: each example runs a whole session;
#: MCPACTOR_FUZZ_EXAMPLES=N asks for a deeper run
FUZZ: Final = settings(
    max_examples=int(os.environ.get("MCPACTOR_FUZZ_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

#: the ids the scenarios use themselves; generated ids never take them
OWN_IDS: Final = frozenset({"init", "held", "good", "ask", "in batch"})

_I64: Final = 2**63 - 1

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-_I64, _I64)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    # control characters, NUL and escapes are where quoting goes wrong
    | st.text(st.characters(max_codepoint=0x20) | st.sampled_from("\\\"'\u2028\ufeff"), max_size=6)
    | st.text(min_size=2000, max_size=3000)
)
shallow = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=10,
)


@st.composite
def json_values(draw: st.DrawFn) -> Any:
    """Any JSON value; some wrapped in up to MAX_DEPTH + 40 more levels, a few in up to
    1100 (past what orjson can parse, 1024)."""
    value = draw(shallow)
    wrap = draw(st.integers(0, 5))
    if wrap <= 1:
        levels = draw(st.integers(1, MAX_DEPTH + 40) if wrap else st.integers(250, 1100))
        for _ in range(levels):
            value = [value] if draw(st.booleans()) else {"k": value}
    return value


def _set(message: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    node = message
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    return message


# Each template is a well-formed message; the hole (a path into it) gets the value.
TEMPLATES: Final[list[tuple[str, dict[str, Any], tuple[str, ...]]]] = [
    ("id", {"jsonrpc": "2.0", "method": "ping"}, ("id",)),
    ("method", {"jsonrpc": "2.0", "id": 7}, ("method",)),
    ("jsonrpc", {"id": 7, "method": "ping"}, ("jsonrpc",)),
    ("params", {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}, ("params",)),
    ("_meta", {"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {}}, ("params", "_meta")),
    (
        "progressToken",
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "echo"}},
        ("params", "_meta", "progressToken"),
    ),
    (
        "cursor",
        {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}},
        ("params", "cursor"),
    ),
    (
        "arguments",
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "echo"}},
        ("params", "arguments"),
    ),
    (
        "argument",
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "echo"}},
        ("params", "arguments", "value"),
    ),
    (
        "checked argument",
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "checked"}},
        ("params", "arguments", "tree"),
    ),
    (
        "const argument",
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "checked"}},
        ("params", "arguments", "pair"),
    ),
    (
        "tool name",
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {}},
        ("params", "name"),
    ),
    (
        "uri",
        {"jsonrpc": "2.0", "id": 7, "method": "resources/read", "params": {}},
        ("params", "uri"),
    ),
    (
        "task id",
        {"jsonrpc": "2.0", "id": 7, "method": "tasks/get", "params": {}},
        ("params", "taskId"),
    ),
    (
        "cancelled id",
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}},
        ("params", "requestId"),
    ),
    (
        "log level",
        {"jsonrpc": "2.0", "id": 7, "method": "logging/setLevel", "params": {}},
        ("params", "level"),
    ),
    ("response result", {"jsonrpc": "2.0", "id": 99}, ("result",)),
    ("response error", {"jsonrpc": "2.0", "id": 99}, ("error",)),
]


@st.composite
def hostile_messages(draw: st.DrawFn) -> tuple[str, Any]:
    """(position, message): one message with an arbitrary value in one position."""
    position, template, path = draw(st.sampled_from(TEMPLATES))
    value = draw(json_values())
    if position in ("id", "cancelled id"):
        value = draw(st.just(value) | st.integers(-_I64, _I64) | st.text(max_size=10))
        if type(value) is str and value in OWN_IDS:
            value = "other"
    message = _set(_copy(template), path, value)
    return position, message


def _copy(value: Any) -> Any:
    if type(value) is dict:
        return {key: _copy(item) for key, item in value.items()}
    return value


@st.composite
def client_answers(draw: st.DrawFn) -> dict[str, Any]:
    """The body of a client's answer to a server→client request: result, error or junk."""
    kind = draw(st.sampled_from(["result", "result field", "error", "error data", "junk"]))
    if kind == "result":
        return {"result": draw(json_values())}
    if kind == "result field":
        result = {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"}
        field = draw(
            st.sampled_from(["role", "content", "model", "stopReason", "_meta", "roots", "action"])
        )
        result[field] = draw(json_values())
        return {"result": result}
    if kind == "error":
        return {"error": draw(json_values())}
    if kind == "error data":
        return {
            "error": {
                "code": draw(st.integers(-_I64, _I64)),
                "message": draw(scalars),
                "data": draw(json_values()),
            }
        }
    return draw(
        st.dictionaries(
            st.sampled_from(["result", "error", "method", "params"]), json_values(), max_size=3
        )
    )


def is_request_with_id(message: Any) -> bool:
    """Whether a spec-abiding server owes ``message`` a response naming its id."""
    if type(message) is not dict or "method" not in message:
        return False
    request_id = message.get("id")
    return type(request_id) in (int, str)


def too_deep(message: Any) -> bool:
    """Whether ``message`` nests deeper than the framer accepts."""
    return exceeds_depth(message, MAX_DEPTH)


#: the deepest nesting orjson parses at all
PARSABLE_DEPTH: Final = 1024


def parsable(message: Any) -> bool:
    """Whether the framer can read ``message`` at all (else: -32700, no id)."""
    return not exceeds_depth(message, PARSABLE_DEPTH)


class Probe:
    """Lets a scenario hold one request in flight and release it."""

    def __init__(self) -> None:
        self.started = trio.Event()
        self.release = trio.Event()


_TREE: Final = {
    "type": "object",
    "properties": {
        "tree": {"$ref": "#/$defs/tree"},
        "pair": {"const": [1, [True, {"a": None}]]},
        "pick": {"enum": ["a", [1], {"b": [2.5]}]},
        "numbers": {"type": "array", "items": {"type": "integer"}},
    },
    "$defs": {
        "tree": {
            "anyOf": [{"type": "string"}, {"type": "array", "items": {"$ref": "#/$defs/tree"}}]
        }
    },
}


def fuzz_server(probe: Probe) -> Server:
    """The server the fuzz scenarios talk to."""
    server = Server("fuzz", "1.0.0")

    @server.tool()
    async def echo(value: Any = None) -> Any:
        """Answer with the value, as structured content."""
        return value

    @server.tool(input_schema=_TREE)
    async def checked(
        tree: Any = None, pair: Any = None, pick: Any = None, numbers: Any = None
    ) -> str:
        """Validate against a recursive schema, a deep const and a deep enum."""
        return "valid"

    @server.tool()
    async def nested(levels: int) -> dict[str, Any]:
        """Answer with structured content nested ``levels`` deep under ``v``."""
        value: Any = "leaf"
        for _ in range(min(levels, 2000)):
            value = [value]
        return {"v": value}

    @server.tool()
    async def hold() -> str:
        """Stay in flight until the scenario releases it."""
        probe.started.set()
        await probe.release.wait()
        return "released"

    @server.tool()
    async def ask(what: str, ctx: Context) -> str:
        """Send a server→client request and report what came back."""
        if what == "sampling":
            result: Any = await ctx.sample("hi", max_tokens=5)
        elif what == "elicitation":
            result = await ctx.elicit(
                "name?", {"type": "object", "properties": {"n": {"type": "string"}}}
            )
        else:
            result = await ctx.list_roots()
        return f"got {type(result).__name__}"

    @server.prompt()
    async def scaled(factor: float) -> str:
        """A prompt whose argument is converted from its string."""
        return f"scaled by {factor}"

    @server.resource("fuzz://{name}")
    async def named(name: str) -> str:
        """A resource template to route URIs against."""
        return name

    return server
