"""The official MCP Python SDK client against ``examples/everything.py`` over stdio.

Every test runs at each session revision the SDK can negotiate. One server process and
one SDK session serve all the tests of a revision (a module-scoped fixture), so the
tests share the server's state: each uses its own labels and looks only at what arrives
after it started.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import anyio
import mcp.types as types
import pytest
from anyio.from_thread import start_blocking_portal
from mcp import ClientSession, MCPError, stdio_client

from ._sdk_client import (
    CLIENT_ROOTS,
    ELICITED,
    MODEL,
    MODEL_ANSWER,
    REVISIONS,
    TIMEOUT,
    SdkClient,
    capabilities,
    has_elicitation,
    has_structured_content,
    initialize_at,
    open_sdk_client,
    server_parameters,
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module", params=REVISIONS)
def client(request: pytest.FixtureRequest) -> Iterator[SdkClient]:
    with (
        start_blocking_portal(backend="asyncio") as portal,
        portal.wrap_async_context_manager(open_sdk_client(request.param)) as sdk_client,
    ):
        sdk_client.portal = portal
        yield sdk_client


def text_of(result: types.CallToolResult) -> str:
    """The text of a tool result that has exactly one text block."""
    assert len(result.content) == 1, result.content
    block = result.content[0]
    assert isinstance(block, types.TextContent), block
    return block.text


def structured_of(client: SdkClient, result: types.CallToolResult) -> Any:
    """A tool's structured result: ``structuredContent`` where the revision has it.

    Older revisions have no ``structuredContent``; there the text block carries the same
    value as JSON, and that is what a client of those revisions reads.
    """
    assert not result.is_error, result.content
    fallback = json.loads(text_of(result))
    if has_structured_content(client.version):
        assert result.structured_content == fallback
        return result.structured_content
    assert result.structured_content is None
    return fallback


async def job_outcome(client: SdkClient, label: str) -> str:
    """Wait for the server's job ``label`` to end; return how it ended."""
    result = await client.sdk.call_tool("job_outcome", {"label": label})
    outcome = text_of(result)
    if has_structured_content(client.version):
        assert result.structured_content == {"result": outcome}
    return outcome


async def set_log_level(client: SdkClient, level: types.LoggingLevel) -> None:
    # ClientSession.set_logging_level is deprecated for the stateless 2026 revision only;
    # the typed request is what it sends.
    await client.sdk.send_request(
        types.SetLevelRequest(params=types.SetLevelRequestParams(level=level)), types.EmptyResult
    )


# --- lifecycle ---------------------------------------------------------------------------


def test_initialize_negotiates_the_offered_revision(client: SdkClient) -> None:
    result = client.initialize_result
    assert result is not None
    assert result.protocol_version == client.version
    assert client.sdk.protocol_version == client.version
    assert result.server_info.name == "everything"
    assert result.server_info.version == "1.0.0"
    # serverInfo gained a title in 2025-06-18 and a description in 2025-11-25.
    assert result.server_info.title == ("Everything" if client.version >= "2025-06-18" else None)
    assert result.server_info.description == (
        "A tour of every mcpactor feature" if client.version == "2025-11-25" else None
    )
    assert result.instructions == "A demonstration server: every tool is safe to call."
    caps = result.capabilities
    assert caps.tools is not None
    assert caps.tools.list_changed is True
    assert caps.resources is not None
    assert caps.resources.subscribe is True
    assert caps.prompts is not None
    assert caps.logging is not None
    # The completions capability first appeared in 2025-03-26.
    assert (caps.completions is not None) == (client.version != "2024-11-05")


def test_ping(client: SdkClient) -> None:
    async def scenario(c: SdkClient) -> types.EmptyResult:
        return await c.sdk.send_ping()

    assert isinstance(client.run(scenario), types.EmptyResult)


# --- tools -------------------------------------------------------------------------------


def test_list_tools_shows_schemas_the_revision_has(client: SdkClient) -> None:
    async def scenario(c: SdkClient) -> types.ListToolsResult:
        return await c.sdk.list_tools()

    tools = {tool.name: tool for tool in client.run(scenario).tools}
    assert {"echo", "add", "divide", "forecast", "sleep", "crunch", "ask_model"} <= set(tools)
    echo = tools["echo"]
    assert echo.input_schema["properties"]["text"] == {
        "type": "string",
        "description": "the text to send back",
    }
    forecast = tools["forecast"]
    assert forecast.input_schema["properties"]["units"]["enum"] == ["celsius", "fahrenheit"]
    if has_structured_content(client.version):
        assert forecast.output_schema is not None
        assert forecast.output_schema["required"] == ["city", "temperature", "units", "sky"]
    else:
        assert forecast.output_schema is None
    # Tool annotations first appeared in 2025-03-26.
    if client.version == "2024-11-05":
        assert echo.annotations is None
    else:
        assert echo.annotations is not None
        assert echo.annotations.read_only_hint is True


def test_call_tool_text(client: SdkClient) -> None:
    async def scenario(c: SdkClient) -> list[types.CallToolResult]:
        return [
            await c.sdk.call_tool("echo", {"text": "héllo, wörld"}),
            await c.sdk.call_tool("shout", {"text": "hi there", "style": "title", "times": 2}),
            await c.sdk.call_tool("add", {"a": 2, "b": 40}),
        ]

    echo, shout, add = client.run(scenario)
    assert text_of(echo) == "héllo, wörld"
    assert text_of(shout) == "Hi There Hi There"
    # A structured result's text block is its structuredContent as JSON.
    assert structured_of(client, add) == {"result": 42}


def test_call_tool_structured_output(client: SdkClient) -> None:
    async def scenario(c: SdkClient) -> list[types.CallToolResult]:
        return [
            await c.sdk.call_tool("forecast", {"city": "Oslo", "units": "fahrenheit"}),
            await c.sdk.call_tool("summarize_numbers", {"numbers": [1, 2, 4.5]}),
        ]

    forecast, summary = client.run(scenario)
    assert structured_of(client, forecast) == {
        "city": "Oslo",
        "temperature": 57.2,
        "units": "fahrenheit",
        "sky": "cloudy",
    }
    assert structured_of(client, summary) == {"count": 3, "mean": 2.5, "spread": 3.5}


def test_tool_error_is_an_error_result(client: SdkClient) -> None:
    async def scenario(c: SdkClient) -> types.CallToolResult:
        return await c.sdk.call_tool("divide", {"dividend": 1, "divisor": 0})

    result = client.run(scenario)
    assert result.is_error is True
    assert text_of(result) == "cannot divide by zero: pick a non-zero divisor"
    assert result.structured_content is None


def test_invalid_arguments(client: SdkClient) -> None:
    async def scenario(c: SdkClient) -> types.CallToolResult | MCPError:
        try:
            return await c.sdk.call_tool("add", {"a": "two", "b": 40})
        except MCPError as exc:
            return exc

    outcome = client.run(scenario)
    # 2025-11-25 made invalid arguments a tool execution error the model can read.
    if client.version == "2025-11-25":
        assert isinstance(outcome, types.CallToolResult)
        assert outcome.is_error is True
        assert "'two' is not of type 'integer'" in text_of(outcome)
    else:
        assert isinstance(outcome, MCPError)
        assert outcome.error.code == types.INVALID_PARAMS
        assert "'two' is not of type 'integer'" in outcome.error.message


def test_unknown_tool_is_invalid_params(client: SdkClient) -> None:
    async def scenario(c: SdkClient) -> None:
        await c.sdk.call_tool("no_such_tool", {})

    with pytest.raises(MCPError) as caught:
        client.run(scenario)
    assert caught.value.error.code == types.INVALID_PARAMS
    assert "no_such_tool" in caught.value.error.message


def test_call_tool_image_and_embedded_resource(client: SdkClient) -> None:
    async def scenario(c: SdkClient) -> list[types.CallToolResult]:
        return [
            await c.sdk.call_tool("pixel", {}),
            await c.sdk.call_tool("attach_note", {"note_id": 2}),
        ]

    pixel, note = client.run(scenario)
    [image] = pixel.content
    assert isinstance(image, types.ImageContent)
    assert image.mime_type == "image/png"
    assert base64.b64decode(image.data).startswith(PNG_SIGNATURE)
    text, embedded = note.content
    assert isinstance(text, types.TextContent)
    assert text.text == "Note 2 is attached."
    assert isinstance(embedded, types.EmbeddedResource)
    assert isinstance(embedded.resource, types.TextResourceContents)
    assert str(embedded.resource.uri) == "everything://notes/2"
    assert embedded.resource.text == "Trio nurseries own their tasks."


def test_tool_added_at_run_time_is_announced(client: SdkClient) -> None:
    async def scenario(c: SdkClient) -> tuple[types.CallToolResult, list[str], str]:
        mark = c.notifications.mark()
        added = await c.sdk.call_tool(
            "teach_greeting", {"language": "Italian", "greeting": "Ciao"}
        )
        await c.notifications.wait_for(
            lambda n: isinstance(n, types.ToolListChangedNotification), after=mark
        )
        names = [tool.name for tool in (await c.sdk.list_tools()).tools]
        greeting = await c.sdk.call_tool("greet_italian", {"person": "Ann"})
        return added, names, text_of(greeting)

    added, names, greeting = client.run(scenario)
    assert text_of(added) == "added tool 'greet_italian'"
    assert "greet_italian" in names
    assert greeting == "Ciao, Ann!"


# --- progress, logging, cancellation -----------------------------------------------------


def test_progress_reaches_the_callback(client: SdkClient) -> None:
    Report = tuple[float, float | None, str | None]

    async def scenario(c: SdkClient) -> tuple[str, list[Report]]:
        reports: list[Report] = []
        got_all = anyio.Event()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            reports.append((progress, total, message))
            if len(reports) == 3:
                got_all.set()

        result = await c.sdk.call_tool("count_to", {"n": 3}, progress_callback=on_progress)
        with anyio.fail_after(TIMEOUT):
            await got_all.wait()
        return text_of(result), reports

    text, reports = client.run(scenario)
    assert text == "counted to 3"
    # Progress messages first appeared in 2025-03-26.
    messages = [f"counted to {i}" if client.version != "2024-11-05" else None for i in (1, 2, 3)]
    assert sorted(reports, key=lambda report: report[0]) == [
        (1.0, 3.0, messages[0]),
        (2.0, 3.0, messages[1]),
        (3.0, 3.0, messages[2]),
    ]


def test_log_messages_follow_the_level_the_client_sets(client: SdkClient) -> None:
    async def scenario(c: SdkClient) -> tuple[list[Any], list[Any]]:
        await set_log_level(c, "debug")
        mark = c.logs.mark()
        await c.sdk.call_tool("count_to", {"n": 2})
        await c.logs.wait_for(lambda m: m.data == "counted to 2", after=mark)
        await c.logs.wait_for(lambda m: m.data == "step 2 of 2", after=mark)
        verbose = [(m.level, m.data) for m in c.logs.since(mark)]

        await set_log_level(c, "info")
        mark = c.logs.mark()
        await c.sdk.call_tool("count_to", {"n": 4})
        await c.logs.wait_for(lambda m: m.data == "counted to 4", after=mark)
        quiet = [(m.level, m.data) for m in c.logs.since(mark)]
        return verbose, quiet

    verbose, quiet = client.run(scenario)
    assert sorted(verbose) == [
        ("debug", "step 1 of 2"),
        ("debug", "step 2 of 2"),
        ("info", "counted to 2"),
    ]
    # The server sends the debug messages before the info one, and the SDK handles them
    # in that order, so none of them can still be on its way.
    assert quiet == [("info", "counted to 4")]


def test_unknown_log_level_is_invalid_params(client: SdkClient) -> None:
    async def scenario(c: SdkClient) -> None:
        await c.sdk.send_request(
            types.SetLevelRequest(
                params=types.SetLevelRequestParams.model_construct(level="loud")
            ),
            types.EmptyResult,
        )

    with pytest.raises(MCPError) as caught:
        client.run(scenario)
    assert caught.value.error.code == types.INVALID_PARAMS


def test_cancelling_the_call_stops_the_slow_tool(client: SdkClient) -> None:
    async def scenario(c: SdkClient) -> str:
        await set_log_level(c, "info")
        mark = c.logs.mark()
        async with anyio.create_task_group() as tasks:
            call = anyio.CancelScope()

            async def slow_call() -> None:
                with call:
                    await c.sdk.call_tool("sleep", {"seconds": 600, "label": "nap"})
                    raise AssertionError("the slow tool returned instead of being cancelled")

            tasks.start_soon(slow_call)
            # The tool logs when it starts sleeping: cancel a call that is really running.
            await c.logs.wait_for(lambda m: m.data == "nap: sleeping for 600 s", after=mark)
            # The SDK's way to cancel: cancel the scope awaiting the call; it then sends
            # notifications/cancelled for the request.
            call.cancel()
        # job_outcome waits for the tool's handler to end: it answers only if the
        # cancellation reached the handler (the tool would sleep for ten minutes).
        return await job_outcome(c, "nap")

    assert client.run(scenario) == "cancelled"


def test_cancelling_the_call_stops_the_blocking_tool(client: SdkClient) -> None:
    async def scenario(c: SdkClient) -> tuple[str, Any, str]:
        await set_log_level(c, "info")
        mark = c.logs.mark()
        async with anyio.create_task_group() as tasks:
            call = anyio.CancelScope()

            async def blocking_call() -> None:
                with call:
                    await c.sdk.call_tool("crunch", {"steps": 100_000, "label": "long-crunch"})
                    raise AssertionError("the blocking tool returned instead of being cancelled")

            tasks.start_soon(blocking_call)
            # After this message the worker thread only computes and calls
            # check_cancelled(): that is the only way the cancellation can reach it.
            await c.logs.wait_for(
                lambda m: m.data == "long-crunch: crunching 100000 steps", after=mark
            )
            call.cancel()
        cancelled = await job_outcome(c, "long-crunch")
        # A short run of the same tool still finishes.
        total = await c.sdk.call_tool("crunch", {"steps": 3, "label": "short-crunch"})
        return cancelled, structured_of(c, total), await job_outcome(c, "short-crunch")

    cancelled, total, finished = client.run(scenario)
    assert cancelled == "cancelled"
    assert total == {"result": 1 + 4 + 9}
    assert finished == "finished"


# --- requests to the client --------------------------------------------------------------


def test_sampling_request_is_answered_by_the_callback(client: SdkClient) -> None:
    async def scenario(c: SdkClient) -> types.CallToolResult:
        return await c.sdk.call_tool("ask_model", {"question": "Why is the sky blue?"})

    before = len(client.sampling_requests)
    result = client.run(scenario)
    assert text_of(result) == f"{MODEL} answered: {MODEL_ANSWER}"
    [request] = client.sampling_requests[before:]
    assert request.max_tokens == 200
    assert request.system_prompt == "Answer in one short sentence."
    [message] = request.messages
    assert message.role == "user"
    assert isinstance(message.content, types.TextContent)
    assert message.content.text == "Why is the sky blue?"


def test_elicitation_request_is_answered_by_the_callback(client: SdkClient) -> None:
    async def scenario(c: SdkClient) -> types.CallToolResult:
        return await c.sdk.call_tool("book_table", {"restaurant": "Chez Trio"})

    before = len(client.elicitation_requests)
    result = client.run(scenario)
    if not has_elicitation(client.version):
        # Elicitation does not exist before 2025-06-18: the client cannot declare it, and
        # the tool fails clearly instead of sending a request the client cannot read.
        assert result.is_error is True
        assert "'elicitation' capability" in text_of(result)
        assert client.elicitation_requests[before:] == []
        return
    assert text_of(result) == f"Booked Chez Trio for {ELICITED['guests']} on the terrace."
    [request] = client.elicitation_requests[before:]
    assert isinstance(request, types.ElicitRequestFormParams)
    assert request.message == "How many guests for Chez Trio?"
    assert request.requested_schema["required"] == ["guests"]


def test_roots_request_is_answered_by_the_callback(client: SdkClient) -> None:
    async def scenario(c: SdkClient) -> types.CallToolResult:
        return await c.sdk.call_tool("workspace_roots", {})

    before = client.roots_requests
    result = client.run(scenario)
    assert structured_of(client, result) == {"result": [str(r.uri) for r in CLIENT_ROOTS]}
    assert client.roots_requests == before + 1


def test_roots_list_changed_runs_the_servers_hook(client: SdkClient) -> None:
    async def scenario(c: SdkClient) -> Any:
        await set_log_level(c, "info")
        mark = c.logs.mark()
        await c.sdk.send_notification(types.RootsListChangedNotification())
        message = await c.logs.wait_for(
            lambda m: str(m.data).startswith("roots changed"), after=mark
        )
        return message.data

    assert client.run(scenario) == "roots changed: file:///srv/project, file:///srv/docs"


# --- resources ---------------------------------------------------------------------------


def test_list_resources_and_templates(client: SdkClient) -> None:
    async def scenario(c: SdkClient) -> tuple[Any, Any]:
        return await c.sdk.list_resources(), await c.sdk.list_resource_templates()

    resources, templates = client.run(scenario)
    by_uri = {str(r.uri): r for r in resources.resources}
    assert set(by_uri) == {"everything://about", "everything://pixel.png", "everything://counter"}
    assert by_uri["everything://about"].mime_type == "text/markdown"
    [template] = templates.resource_templates
    assert template.uri_template == "everything://notes/{note_id}"
    assert template.name == "note"


def test_read_static_and_binary_resources(client: SdkClient) -> None:
    async def scenario(c: SdkClient) -> tuple[Any, Any]:
        return (
            await c.sdk.read_resource("everything://about"),
            await c.sdk.read_resource("everything://pixel.png"),
        )

    about, pixel = client.run(scenario)
    [text] = about.contents
    assert isinstance(text, types.TextResourceContents)
    assert text.mime_type == "text/markdown"
    assert text.text.startswith("# Everything\n\nA tour of mcpactor, up for ")
    [blob] = pixel.contents
    assert isinstance(blob, types.BlobResourceContents)
    assert blob.mime_type == "image/png"
    assert base64.b64decode(blob.blob).startswith(PNG_SIGNATURE)


def test_read_templated_resource(client: SdkClient) -> None:
    async def scenario(c: SdkClient) -> Any:
        return await c.sdk.read_resource("everything://notes/3")

    [contents] = client.run(scenario).contents
    assert isinstance(contents, types.TextResourceContents)
    assert str(contents.uri) == "everything://notes/3"
    assert contents.text == "Call the plumber about the sink."


def test_read_missing_resource_is_an_error(client: SdkClient) -> None:
    async def scenario(c: SdkClient) -> Any:
        return await c.sdk.read_resource("everything://notes/99")

    with pytest.raises(MCPError) as caught:
        client.run(scenario)
    assert caught.value.error.code == -32002
    assert caught.value.error.message == "no note 99"


def test_subscribed_resource_update_is_notified(client: SdkClient) -> None:
    counter = "everything://counter"

    async def scenario(c: SdkClient) -> tuple[Any, Any, Any]:
        before = await c.sdk.read_resource(counter)
        # ClientSession.subscribe_resource is deprecated for the stateless 2026 revision
        # only; the typed request is what it sends.
        await c.sdk.send_request(
            types.SubscribeRequest(params=types.SubscribeRequestParams(uri=counter)),
            types.EmptyResult,
        )
        mark = c.notifications.mark()
        await c.sdk.call_tool("increment", {"by": 5})
        updated = await c.notifications.wait_for(
            lambda n: isinstance(n, types.ResourceUpdatedNotification), after=mark
        )
        after = await c.sdk.read_resource(counter)
        await c.sdk.send_request(
            types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=counter)),
            types.EmptyResult,
        )
        return before, updated, after

    before, updated, after = client.run(scenario)
    assert str(updated.params.uri) == counter
    value_before = json.loads(before.contents[0].text)["value"]
    assert json.loads(after.contents[0].text) == {"value": value_before + 5}


# --- prompts and completion --------------------------------------------------------------


def test_list_prompts(client: SdkClient) -> None:
    async def scenario(c: SdkClient) -> types.ListPromptsResult:
        return await c.sdk.list_prompts()

    prompts = {p.name: p for p in client.run(scenario).prompts}
    assert set(prompts) == {"code_review", "describe_image", "discuss_note", "translate"}
    arguments = {a.name: a for a in prompts["code_review"].arguments or []}
    assert arguments["code"].required is True
    assert arguments["code"].description == "the code to review"
    assert arguments["language"].required is False


def test_get_prompts_with_text_image_and_embedded_resource(client: SdkClient) -> None:
    async def scenario(c: SdkClient) -> list[types.GetPromptResult]:
        return [
            await c.sdk.get_prompt("code_review", {"code": "x = 1", "language": "go"}),
            await c.sdk.get_prompt("describe_image"),
            await c.sdk.get_prompt("discuss_note", {"note_id": "1"}),
        ]

    review, image, note = client.run(scenario)
    [message] = review.messages
    assert message.role == "user"
    assert isinstance(message.content, types.TextContent)
    assert message.content.text == "Please review this go code:\n\nx = 1"
    assert review.description == "Ask the model to review some code."

    question, picture = image.messages
    assert isinstance(question.content, types.TextContent)
    assert isinstance(picture.content, types.ImageContent)
    assert base64.b64decode(picture.content.data).startswith(PNG_SIGNATURE)

    embedded, ask = note.messages
    assert isinstance(embedded.content, types.EmbeddedResource)
    assert isinstance(embedded.content.resource, types.TextResourceContents)
    assert embedded.content.resource.text == "Buy oat milk."
    assert isinstance(ask.content, types.TextContent)


def test_get_prompt_without_required_argument_is_invalid_params(client: SdkClient) -> None:
    async def scenario(c: SdkClient) -> Any:
        return await c.sdk.get_prompt("code_review", {})

    with pytest.raises(MCPError) as caught:
        client.run(scenario)
    assert caught.value.error.code == types.INVALID_PARAMS
    assert "code" in caught.value.error.message


def test_complete_prompt_and_template_arguments(client: SdkClient) -> None:
    async def scenario(c: SdkClient) -> list[types.CompleteResult]:
        return [
            await c.sdk.complete(
                types.PromptReference(type="ref/prompt", name="translate"),
                {"name": "target", "value": "d"},
            ),
            await c.sdk.complete(
                types.PromptReference(type="ref/prompt", name="code_review"),
                {"name": "language", "value": "r"},
            ),
            await c.sdk.complete(
                types.ResourceTemplateReference(
                    type="ref/resource", uri="everything://notes/{note_id}"
                ),
                {"name": "note_id", "value": ""},
            ),
        ]

    languages, enum_values, note_ids = client.run(scenario)
    assert languages.completion.values == ["Danish", "Dutch"]
    assert enum_values.completion.values == ["rust"]
    assert note_ids.completion.values == ["1", "2", "3"]


# --- a client that declares no sampling ----------------------------------------------------


def test_tool_needing_sampling_fails_clearly_without_the_capability() -> None:
    async def main() -> tuple[types.CallToolResult, str]:
        async with (
            stdio_client(server_parameters()) as (read, write),
            ClientSession(read, write, read_timeout_seconds=TIMEOUT) as session,
        ):
            version = "2025-11-25"
            await initialize_at(
                session, version, capabilities(version, sampling=False, elicitation=False)
            )
            result = await session.call_tool("ask_model", {"question": "Anyone there?"})
            still_serving = await session.call_tool("echo", {"text": "still here"})
            return result, text_of(still_serving)

    result, echo = anyio.run(main, backend="asyncio")
    assert result.is_error is True
    message = text_of(result)
    assert "did not declare the 'sampling' capability" in message
    assert "sampling/createMessage" in message
    assert echo == "still here"
