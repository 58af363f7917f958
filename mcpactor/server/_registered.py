# What one Server registered itself: its tools, resources, templates, prompts and
# completers, what is worked out from them alone, and how a registered tool is called.
#
# The Server fills the ``Registry`` (its ``tool``/``resource``/``prompt`` decorators build
# the entries in _registration.py); the request handlers (_handlers.py) read the same
# dicts. What a server serves once it mounts others is its composition's business
# (_compose.py): it asks the registry only for the parent's own entries.
#
# A ``tools/call`` is ``ToolCalls`` finding the tool by name, then ``ToolEntry.call``:
# the compiled check of the arguments, their binding, the function, the result. What
# registration could settle it settled (the checks compiled, whether arguments need
# converting); what few calls need (jsonschema's words for a refusal, a task, a worker
# or a deadline, a failure, a value other than text) is in functions entered only then.

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Mapping, Sized
from typing import TYPE_CHECKING, Any, Final, Protocol

import attrs
import orjson
import trio

from .._exceptions import INVALID_PARAMS, CapabilityError, RequestError, ToolError
from ..auth import InsufficientScope
from ..protocol import (
    MISSING_CLIENT_CAPABILITY,
    WRAPPED_RESULT,
    JSONObject,
    Revision,
    bounded_value,
    describe,
    describe_error,
    error_text,
    unstructure,
    wire_classes_loaded,
)
from ._caching import CacheHint
from ._context import Context
from ._execution import HandlerTimeout, ToolExecution
from ._registry import (
    Catalog,
    PromptEntry,
    ResourceEntry,
    TemplateEntry,
    _prune,
    validation_errors,
)
from ._results import adapt_content, error_result, to_content
from ._rounds import InputNeeded, InputRequired, end_round
from ._schema import FunctionSchema
from ._scopes import check_scopes, merged, scope_error
from ._validation import SchemaValidator

if TYPE_CHECKING:
    # Read where a tool declares mirrored headers (_registration.py).
    from ._headers import HeaderParam

__all__ = [
    "SLOW_VALIDATION_BYTES",
    "CallSettings",
    "Completer",
    "Registry",
    "ToolCalls",
    "ToolEntry",
    "adapt_tool_result",
    "serves_family",
    "tool_result",
]

#: a completion handler, with the name of its Context parameter or None
Completer = Callable[..., Any]

#: arguments larger than this (as JSON) that the fast check cannot settle are validated
#: in a worker thread: jsonschema takes seconds over a few MiB, and the event loop that
#: serves every other session must not wait for it
SLOW_VALIDATION_BYTES: Final = 64 * 1024

_log = logging.getLogger("mcpactor")

# The output schema of a tool returning ``str``: any text is its wrapped result.
_TEXT_OUTPUT_SCHEMA: Final = {
    "type": "object",
    "properties": {"result": {"type": "string"}},
    "required": ["result"],
    WRAPPED_RESULT: True,
}


class CallSettings(Protocol):
    """What a tool call reads of its Server each time (authors may change it)."""

    tool_timeout: float | None


@attrs.define(eq=False)
class ToolEntry:
    """A registered tool: its definition, and what calling it needs, prepared once."""

    name: str
    fn: Callable[..., Any]
    is_async: bool
    #: converts arguments and return values; also used when the inputSchema was given
    signature: FunctionSchema
    #: whether arguments go through ``signature.bind`` (a parameter is loaded from its
    #: JSON); else they go to the handler as sent, once the inputSchema accepts them
    binds_arguments: bool
    input_validator: SchemaValidator
    output_validator: SchemaValidator | None
    definition: JSONObject
    #: extra keyword arguments for the handler (ctx name) or None
    context_param: str | None
    #: where the function runs, its timeout and its task support
    execution: ToolExecution = attrs.field(factory=ToolExecution)
    #: its parameters mirrored into ``Mcp-Param-*`` headers (``x-mcp-header``)
    headers: tuple[HeaderParam, ...] = ()
    #: its own cache hint for ``tools/list``, or None for the server's
    cache: CacheHint | None = None
    #: the scopes a caller's token must grant to call it (none: anyone admitted)
    scopes: tuple[str, ...] = ()
    #: whether any text it returns passes its output schema as is (``-> str``), so that
    #: a text result needs no check: worked out once, from the fields above
    text_output: bool = attrs.field(init=False, repr=False)

    @text_output.default
    def _text_output(self) -> bool:
        output = self.output_validator
        signature = self.signature
        return (
            output is not None
            and signature.wraps_output
            and signature.dump_output is None
            and output.schema == _TEXT_OUTPUT_SCHEMA
        )

    def wire(self, revision: Revision) -> JSONObject:
        """The ``Tool`` object for ``tools/list`` at this revision."""
        return _prune(self.definition, revision.tool_fields)

    async def call(self, params: JSONObject, ctx: Context, settings: CallSettings) -> JSONObject:
        """Run the tool for a ``tools/call``: its result, or one with ``isError: true``.

        Raises:
            RequestError: -32602 for ``arguments`` that are not an object (or break the
                inputSchema where the revision refuses them); -32010 for a step-up.
            InputNeeded: the tool asked the client, at a revision that asks in results.
        """
        name = self.name
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        elif type(arguments) is not dict:
            raise RequestError(
                INVALID_PARAMS, f"tool {describe(name)}: 'arguments' must be an object"
            )
        revision = ctx.negotiated.revision
        if not self.input_validator.passes_fast(arguments):
            refused = await self._refused(arguments, revision)
            if refused is not None:
                return refused
        kwargs = self.signature.bind(arguments) if self.binds_arguments else arguments.copy()
        if self.context_param is not None:
            kwargs[self.context_param] = ctx
        execution = self.execution
        timeout = execution.timeout if execution.timeout is not None else settings.tool_timeout
        try:
            if execution.offload is not None or timeout is not None:
                # Deadlines and worker processes need the event loop: the runtime runs those.
                offload = execution.offload_for(self.is_async)
                value = await ctx._peer.call(self.fn, kwargs, offload=offload, timeout=timeout)
            elif self.is_async:
                value = await self.fn(**kwargs)
            else:
                value = await ctx._peer.run_sync(functools.partial(self.fn, **kwargs))
        except ToolError as exc:
            # The tool's own words, unclipped; only a str() that cannot finish is replaced.
            return error_result(error_text(exc, None))
        except HandlerTimeout as exc:
            return error_result(f"tool {describe(name)} timed out after {exc.timeout:g} s")
        except (RequestError, InputNeeded):
            raise
        except InsufficientScope as exc:
            # A step-up is a refusal of the request, not a failure of the tool.
            raise scope_error(merged(self.scopes, exc)) from None
        except Exception as exc:
            if isinstance(exc, CapabilityError) and exc.code == MISSING_CLIENT_CAPABILITY:
                # A stateless request that needs what its client did not declare: -32021.
                raise
            _log.exception("tool %r failed", name)
            return error_result(f"tool {describe(name)} failed: {describe_error(exc)}")
        output = self.output_validator
        if type(value) is str and output is None:
            # Most tools return text: the result every revision carries as it is.
            return {"content": [{"type": "text", "text": value}]}
        if type(value) is not str and isinstance(value, InputRequired):
            end_round(value, revision)
        structured = None
        if output is not None and (type(value) is str or not _is_whole_result(value)):
            # What ``signature.structure_output`` returns, without a call per step.
            signature = self.signature
            dump = signature.dump_output
            structured = value if dump is None else dump(value)
            if signature.wraps_output:
                structured = {"result": structured}
            if (type(value) is not str or not self.text_output) and not output.passes_fast(
                structured
            ):
                broken = self._broken_output(output, structured)
                if broken is not None:
                    return broken
        result = tool_result(value, structured, has_output_schema=output is not None)
        return adapt_tool_result(result, revision)

    async def _refused(self, arguments: JSONObject, revision: Revision) -> JSONObject | None:
        # The fast check could not say yes: jsonschema decides, and words what is wrong.
        errors = await _validate(self.input_validator, arguments)
        if not errors:
            return None
        message = f"invalid arguments for tool {describe(self.name)}: " + "; ".join(
            f"{e['path']}: {e['message']}" for e in errors
        )
        if revision.input_errors_in_result:
            return error_result(message)
        raise RequestError(INVALID_PARAMS, message, {"tool": self.name, "errors": errors})

    def _broken_output(self, output: SchemaValidator, structured: Any) -> JSONObject | None:
        # The fast check could not say yes to what the tool returned: jsonschema decides.
        errors = validation_errors(output, structured)
        if not errors:
            return None
        name = self.name
        _log.error("tool %r returned output that breaks its outputSchema: %s", name, errors)
        return error_result(
            f"tool {describe(name)} returned output that does not match its outputSchema: "
            + "; ".join(f"{e['path']}: {e['message']}" for e in errors)
        )


class ToolCalls:
    """The ``tools/call`` handler of one server: the tool a request names, called."""

    __slots__ = ("_offers_tasks", "_settings", "_tools")

    def __init__(
        self,
        settings: CallSettings,
        tools: Mapping[str, ToolEntry],
        offers_tasks: Callable[[], bool],
    ) -> None:
        self._settings = settings
        self._tools = tools
        self._offers_tasks = offers_tasks

    def __call__(self, params: JSONObject, ctx: Context) -> Awaitable[JSONObject]:
        """Serve one ``tools/call``: the tool's result, or a task's ``CreateTaskResult``.

        What to await for it: the tool's own call (no frame of this one's in between).
        """
        name = params.get("name")
        tool = self._tools.get(name) if isinstance(name, str) else None
        if tool is None:
            raise RequestError(
                INVALID_PARAMS, f"unknown tool: {describe(name)}", {"name": bounded_value(name)}
            )
        if tool.scopes:
            # Before a task is made of it: a caller without them starts nothing.
            check_scopes(tool.scopes, ctx.principal)
        if params.get("task") is not None or tool.execution.task_support == "required":
            # Only these can be a task (or be refused for not being one).
            return self._as_task(tool, params, ctx)
        return tool.call(params, ctx, self._settings)

    async def _as_task(self, tool: ToolEntry, params: JSONObject, ctx: Context) -> JSONObject:
        from ._tasks import requested_task

        task = requested_task(
            params,
            tool=tool.name,
            support=tool.execution.task_support,
            revision=ctx.negotiated.revision,
            offered=self._offers_tasks(),
        )
        if task is None:
            return await tool.call(params, ctx, self._settings)
        # Answered at once with a CreateTaskResult; the call runs on as a task.
        work = functools.partial(tool.call, params, settings=self._settings)
        return await ctx._peer.tasks.create(work, ctx, task)


async def _validate(validator: SchemaValidator, arguments: JSONObject) -> list[JSONObject]:
    # Every violation of a tool's arguments; jsonschema runs in a worker thread for large
    # ones the fast check cannot settle.
    if validator.passes_fast(arguments):
        return []
    try:
        size = len(orjson.dumps(arguments))
    except TypeError:  # orjson.JSONEncodeError: judged in place, as before
        size = 0
    if size <= SLOW_VALIDATION_BYTES:
        return validation_errors(validator, arguments)
    return await trio.to_thread.run_sync(validation_errors, validator, arguments)


def _is_whole_result(value: Any) -> bool:
    # A CallToolResult the tool built itself (none exists until one is first made).
    return isinstance(value, wire_classes_loaded("CallToolResult"))


def tool_result(value: Any, structured: Any = None, *, has_output_schema: bool) -> JSONObject:
    """Build the ``tools/call`` result object for a tool's return value."""
    if type(value) is not str and _is_whole_result(value):
        return unstructure(value)  # type: ignore[no-any-return]
    if has_output_schema:
        # The text fallback reads naturally: a plain string stays itself.
        text = value if type(value) is str else orjson.dumps(structured).decode()
        return {"content": [{"type": "text", "text": text}], "structuredContent": structured}
    if type(value) is str:
        # Most tools return text.
        return {"content": [{"type": "text", "text": value}]}
    return {"content": unstructure(to_content(value))}


def adapt_tool_result(result: JSONObject, revision: Revision) -> JSONObject:
    """Fit a ``tools/call`` result to what the revision defines."""
    content = result.get("content")
    if isinstance(content, list):
        kinds = revision.content_kinds
        for block in content:
            if type(block) is not dict or block.get("type") not in kinds:
                # A block of a kind the revision cannot carry (most are text).
                adapted = adapt_content(content, revision)
                if adapted != content:
                    result = {**result, "content": adapted}
                break
    if not revision.structured_content and "structuredContent" in result:
        result = {k: v for k, v in result.items() if k != "structuredContent"}
    return result


def serves_family(
    family: str, tools: Sized, prompts: Sized, resources: Sized, templates: Sized
) -> bool:
    """Whether what is listed serves the methods of ``family`` (tasks aside)."""
    if family == "tools":
        return bool(tools)
    if family == "resources":
        return bool(resources or templates)
    if family == "prompts":
        return bool(prompts)
    if family == "completion":
        return bool(prompts or templates)
    return False


class Registry:
    """The entries registered on one server, by name or URI."""

    def __init__(self) -> None:
        self.tools: dict[str, ToolEntry] = {}
        self.resources: dict[str, ResourceEntry] = {}
        self.templates: dict[str, TemplateEntry] = {}
        self.prompts: dict[str, PromptEntry] = {}
        #: (kind, ref, argument) -> (completer, its Context parameter or None)
        self.completers: dict[tuple[str, str, str], tuple[Completer, str | None]] = {}
        # whether some tool may run as a task (None: not known since the tools changed)
        self._task_tools: bool | None = None
        # whether some template needs scopes (None: not known since the resources changed)
        self._scoped_templates: bool | None = None

    def changed(self, kind: str) -> None:
        """Forget what was worked out from the entries of ``kind``."""
        if kind == "tools":
            self._task_tools = None
        elif kind == "resources":
            self._scoped_templates = None

    def catalog(self) -> Catalog:
        """What the server lists of its own (the dicts themselves, not copies)."""
        return Catalog(self.tools, self.prompts, self.resources, self.templates)

    def offers_tasks(self) -> bool:
        """Whether some tool may run as a task."""
        if self._task_tools is None:
            self._task_tools = any(
                tool.execution.task_support != "forbidden" for tool in self.tools.values()
            )
        return self._task_tools

    def serves(self, method: str) -> bool:
        """Whether what is registered serves ``method`` right now."""
        family = method.partition("/")[0]
        if family == "tasks":
            return self.offers_tasks()
        return serves_family(family, self.tools, self.prompts, self.resources, self.templates)

    def capabilities(self, revision: Revision) -> JSONObject:
        """The server capabilities of what is registered: exactly what it serves."""
        capabilities: JSONObject = {"logging": {}}
        if self.tools:
            capabilities["tools"] = {"listChanged": True}
        if self.resources or self.templates:
            capabilities["resources"] = {"subscribe": True, "listChanged": True}
        if self.prompts:
            capabilities["prompts"] = {"listChanged": True}
        if revision.completions_capability and (self.prompts or self.templates):
            capabilities["completions"] = {}
        if revision.tasks and self.offers_tasks():
            from ._tasks import tasks_capability

            capabilities["tasks"] = tasks_capability()
        return capabilities

    def find_resource(
        self, uri: str
    ) -> tuple[ResourceEntry | TemplateEntry, dict[str, Any]] | None:
        """The resource at ``uri``, else the first template matching it, with its arguments."""
        entry = self.resources.get(uri)
        if entry is not None:
            return entry, {}
        for template in self.templates.values():
            values = template.template.match(uri)
            if values is not None:
                return template, template.arguments(values)
        return None

    def scopes(self, method: str, name: str) -> tuple[str, ...]:
        """The scopes the entry a request of ``method`` names needs (empty: none known)."""
        if type(name) is not str:
            return ()
        if method == "tools/call":
            tool = self.tools.get(name)
            return tool.scopes if tool is not None else ()
        if method == "prompts/get":
            prompt = self.prompts.get(name)
            return prompt.scopes if prompt is not None else ()
        if method == "resources/read" or method == "resources/subscribe":
            resource = self.resources.get(name)
            if resource is not None:
                return resource.scopes
            if self._scoped_templates is None:
                self._scoped_templates = any(t.scopes for t in self.templates.values())
            if not self._scoped_templates:
                return ()
            # The first template matching it serves a read, as find_resource routes.
            for template in self.templates.values():
                if template.template.match(name) is not None:
                    return template.scopes
        return ()

    def tool_output(self, name: str, structured: Any) -> Any:
        """The value tool ``name`` returned, rebuilt from its ``structuredContent``."""
        tool = self.tools.get(name)
        if tool is None or tool.output_validator is None:
            return structured
        try:
            return tool.signature.load_output(structured)
        except Exception:
            # Not what the annotation describes (the tool returned a CallToolResult of its
            # own): the JSON is the value.
            return structured
