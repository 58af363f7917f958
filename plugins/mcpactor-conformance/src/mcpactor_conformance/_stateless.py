"""The fixtures of the 2026-07-28 requirement set: what the stateless revision adds.

At 2026-07-28 a request carries its own envelope and the server asks the client in
results: a handler that awaits ``ctx.elicit``, ``ctx.sample`` or ``ctx.list_roots``
answers ``input_required`` and runs again, from the top, on the client's retry (so what
it does before a question must be safe to repeat). Most fixtures here are written that
way and work unchanged in a session, where the same calls are requests to the client.
Where the suite wants keys or a state of its own choosing the fixture runs the rounds
itself: it reads ``ctx.input_responses`` and ``ctx.request_state`` and returns an
``InputRequired``.

Also here: the diagnostic tools of the ``server-stateless`` scenario (a capability the
client must declare, an elicitation on the response stream, logging without a level,
hooks that change the tool and prompt lists) and a tool whose parameter is mirrored
into the ``Mcp-Param-Region`` header.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Final

from mcpactor import Context, Header, InputRequired, Server, TextContent
from mcpactor.protocol import JSONObject
from mcpactor.protocol._mrtr import elicitation_request, roots_request, sampling_request

__all__ = ["CONFIRM_FORM", "CONTEXT_FORM", "NAME_FORM", "register"]

#: the one-field forms the suite's scenarios ask with
NAME_FORM: Final = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}
COLOR_FORM: Final = {
    "type": "object",
    "properties": {"color": {"type": "string"}},
    "required": ["color"],
}
CONFIRM_FORM: Final = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
}
CONTEXT_FORM: Final = {
    "type": "object",
    "properties": {"context": {"type": "string"}},
    "required": ["context"],
}

_GREETING: Final = {"role": "user", "content": {"type": "text", "text": "Generate a greeting"}}

#: the state ``test_input_required_result_request_state`` asks to get back
_STATE: Final = {"fixture": "request_state", "round": 1}


def _accepted(answer: object, field: str) -> Any:
    """The value of ``field`` in an accepted elicitation answer, or None."""
    if type(answer) is not dict or answer.get("action") != "accept":
        return None
    content = answer.get("content")
    return content.get(field) if type(content) is dict else None


def _asks_in_results(ctx: Context) -> bool:
    # The explicit API (a returned InputRequired) exists where questions are results.
    return bool(ctx.negotiated.revision.input_requests)


def register(server: Server) -> None:
    """Add the 2026-07-28 fixtures to ``server``."""
    dynamic = _Toggles(server)

    # --- server-stateless: the diagnostic tools ------------------------------------

    @server.tool()
    async def test_missing_capability(ctx: Context) -> str:
        """Ask the client's model for a word: a client without ``sampling`` gets -32021."""
        reply = await ctx.sample("Reply with one word.", max_tokens=10)
        content = reply.content
        text = content.text if isinstance(content, TextContent) else f"({content.type})"
        return f"LLM response: {text}"

    @server.tool()
    async def test_streaming_elicitation(ctx: Context) -> str:
        """Ask the user to confirm; at 2026-07-28 the question is a result, not a request."""
        answer = await ctx.elicit("Please confirm to continue", CONFIRM_FORM)
        return f"Confirmation: action={answer.action}, content={json.dumps(answer.content)}"

    @server.tool()
    async def test_logging_tool(ctx: Context) -> str:
        """Log three messages at info: sent only if the request named a log level."""
        for step in ("started", "working", "done"):
            await ctx.info(f"Logging tool {step}")
        return "Logged three messages at level info"

    @server.tool()
    async def test_trigger_tool_change() -> str:
        """Add a tool, or remove it again: listeners hear that the tool list changed."""
        return dynamic.toggle_tool()

    @server.tool()
    async def test_trigger_prompt_change() -> str:
        """Add a prompt, or remove it again: listeners hear that the prompt list changed."""
        return dynamic.toggle_prompt()

    # --- header-mirrored parameters -------------------------------------------------

    @server.tool()
    async def test_x_mcp_header(region: Annotated[str, Header("Region")]) -> str:
        """Echo a region that Streamable HTTP clients also send as ``Mcp-Param-Region``.

        Args:
            region: the region to route to
        """
        return f"Region: {region}"

    # --- input_required: multi round-trip requests ------------------------------------

    @server.tool()
    async def test_input_required_result_elicitation(ctx: Context) -> Any:
        """Ask the user's name under the key ``user_name``; greet them on the retry.

        Runs its rounds itself, so the key is its own: an answer that is missing, under
        another key or malformed is asked for again.
        """
        if not _asks_in_results(ctx):  # a session: the question is a request
            answer = await ctx.elicit("What is your name?", NAME_FORM)
            return f"Hello, {(answer.content or {}).get('name')}!"
        name = _accepted(ctx.input_responses.get("user_name"), "name")
        if isinstance(name, str):
            return f"Hello, {name}!"
        return InputRequired({"user_name": elicitation_request("What is your name?", NAME_FORM)})

    @server.tool()
    async def test_input_required_result_sampling(ctx: Context) -> str:
        """Ask the client's model for the capital of France; return its answer."""
        reply = await ctx.sample("What is the capital of France?", max_tokens=100)
        content = reply.content
        text = content.text if isinstance(content, TextContent) else f"({content.type})"
        return f"LLM response: {text}"

    @server.tool()
    async def test_input_required_result_list_roots(ctx: Context) -> str:
        """Ask the client for its roots; name them."""
        roots = await ctx.list_roots()
        return "Client roots: " + (", ".join(str(root.uri) for root in roots) or "none")

    @server.tool()
    async def test_input_required_result_request_state(ctx: Context) -> Any:
        """Ask for a confirmation with a state of its own; say ``state-ok`` when it returns.

        The state comes back sealed: the server opened and checked it before the
        handler sees it as ``ctx.request_state``.
        """
        if not _asks_in_results(ctx):  # a session: no state travels, nothing to check
            answer = await ctx.elicit("Please confirm", CONFIRM_FORM)
            return f"Confirmed (session): action={answer.action}"
        if "confirm" in ctx.input_responses:
            if ctx.request_state != _STATE:
                return f"state-missing: got {json.dumps(ctx.request_state)}"
            ok = _accepted(ctx.input_responses["confirm"], "ok")
            return f"state-ok: confirmed={json.dumps(ok)}"
        return InputRequired(
            {"confirm": elicitation_request("Please confirm", CONFIRM_FORM)}, state=_STATE
        )

    @server.tool()
    async def test_input_required_result_multiple_inputs(ctx: Context) -> Any:
        """Ask for a name, a generated greeting and the roots at once, in one round."""
        asked: dict[str, JSONObject] = {
            "user_name": elicitation_request("What is your name?", NAME_FORM),
            "greeting": sampling_request({"messages": [_GREETING], "maxTokens": 50}),
            "client_roots": roots_request(),
        }
        if not _asks_in_results(ctx):  # a session: one request after the other
            who = await ctx.elicit("What is your name?", NAME_FORM)
            await ctx.sample("Generate a greeting", max_tokens=50)
            return f"name={(who.content or {}).get('name')}, roots={len(await ctx.list_roots())}"
        answers = ctx.input_responses
        missing = {key: request for key, request in asked.items() if key not in answers}
        if missing:
            return InputRequired(missing, state={"fixture": "multiple_inputs"})
        name = _accepted(answers["user_name"], "name")
        greeting = answers["greeting"].get("content")
        text = greeting.get("text") if type(greeting) is dict else None
        roots = answers["client_roots"].get("roots")
        count = len(roots) if type(roots) is list else 0
        return f"name={name}, greeting={text}, roots={count}"

    @server.tool()
    async def test_input_required_result_multi_round(ctx: Context) -> str:
        """Ask two questions, one round each: a name, then a favourite colour."""
        name = await ctx.elicit("Step 1: What is your name?", NAME_FORM)
        color = await ctx.elicit("Step 2: What is your favorite color?", COLOR_FORM)
        return f"name={json.dumps(name.content)}, color={json.dumps(color.content)}"

    @server.tool()
    async def test_input_required_result_tampered_state(ctx: Context) -> str:
        """Ask for a confirmation; a retry whose sealed state was altered is refused."""
        answer = await ctx.elicit("Please confirm", CONFIRM_FORM)
        return f"Confirmed: action={answer.action}"

    @server.tool()
    async def test_input_required_result_capabilities(ctx: Context) -> str:
        """Ask only what the client declared: its model if it can sample, the user if it
        can elicit, its roots if it has them."""
        declared = ctx.client_capabilities
        said: list[str] = []
        if "sampling" in declared:
            reply = await ctx.sample("Say hello.", max_tokens=20)
            said.append(f"sampling: {getattr(reply.content, 'text', reply.content.type)}")
        if "elicitation" in declared:
            answer = await ctx.elicit("What is your name?", NAME_FORM)
            said.append(f"elicitation: {answer.action}")
        if "roots" in declared:
            said.append(f"roots: {len(await ctx.list_roots())}")
        return "; ".join(said) or "the client declared nothing to ask"

    @server.prompt()
    async def test_input_required_result_prompt(ctx: Context) -> str:
        """A prompt that asks the user for its context first."""
        answer = await ctx.elicit("What context should the prompt use?", CONTEXT_FORM)
        context = (answer.content or {}).get("context")
        return f"Use this context: {context}"


class _Toggles:
    """The list-change hooks: each call adds its entry or takes it away again."""

    TOOL: Final = "test_dynamic_tool"
    PROMPT: Final = "test_dynamic_prompt"

    def __init__(self, server: Server) -> None:
        self.server = server

    def toggle_tool(self) -> str:
        """Add ``test_dynamic_tool``, or remove it if it is there."""
        try:
            self.server.remove_tool(self.TOOL)
        except KeyError:
            pass
        else:
            return f"removed {self.TOOL}"

        async def test_dynamic_tool() -> str:
            """A tool that comes and goes with test_trigger_tool_change."""
            return "This tool was added at run time."

        self.server.add_tool(test_dynamic_tool, name=self.TOOL)
        return f"added {self.TOOL}"

    def toggle_prompt(self) -> str:
        """Add ``test_dynamic_prompt``, or remove it if it is there."""
        try:
            self.server.remove_prompt(self.PROMPT)
        except KeyError:
            pass
        else:
            return f"removed {self.PROMPT}"

        async def test_dynamic_prompt() -> str:
            """A prompt that comes and goes with test_trigger_prompt_change."""
            return "This prompt was added at run time."

        self.server.add_prompt(test_dynamic_prompt, name=self.PROMPT)
        return f"added {self.PROMPT}"
