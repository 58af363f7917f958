# What a client returns for ``tools/call``: the result object as it arrived, readable as
# the dict it is (``result["structuredContent"]``), with the tool's value, its text and
# whether it failed as attributes.
#
# The value is rebuilt on first read, not when the result arrives: a caller that reads
# only the dict pays nothing. A client in the same process as the server (in memory) asks
# the server to rebuild it as the tool's annotated return type (``Server.tool_output``);
# any other client has only the JSON, and ``data`` is that, unwrapped where the tool's
# listed outputSchema says the object only wraps the value (``WRAPPED_RESULT``).

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, final

from ..protocol import WRAPPED_RESULT, JSONObject

__all__ = ["OutputDecoder", "ToolOutputs", "ToolResult"]

#: rebuilds a tool's value from its name and ``structuredContent``
OutputDecoder = Callable[[str, Any], Any]

_UNREAD: Final[Any] = object()
# The tools of the tasks this client started, so their results decode as the call's would;
# the oldest are forgotten beyond this many (their results then decode as JSON).
_TASK_TOOLS: Final = 1024


@final
class ToolResult(dict[str, Any]):
    """A ``tools/call`` result: the ``CallToolResult`` object, with its value decoded.

    Read it as the dict it is (``result["content"]``, ``result["structuredContent"]``),
    or through ``data``, ``text`` and ``is_error``.
    """

    __slots__ = ("_data", "_decode", "_tool")

    def __init__(self, result: JSONObject, tool: str, decode: OutputDecoder | None = None) -> None:
        super().__init__(result)
        self._tool = tool
        self._decode = decode
        self._data: Any = _UNREAD

    @property
    def tool(self) -> str:
        """The name of the tool called ("" for a task's result whose tool is forgotten)."""
        return self._tool

    @property
    def is_error(self) -> bool:
        """Whether the tool failed (``isError: true``)."""
        return self.get("isError") is True

    @property
    def text(self) -> str:
        """The text of its text content blocks, joined by newlines ("" when there is none)."""
        content = self.get("content")
        if not isinstance(content, list):
            return ""
        return "\n".join(
            block["text"]
            for block in content
            if type(block) is dict
            and block.get("type") == "text"
            and type(block.get("text")) is str
        )

    @property
    def data(self) -> Any:
        """The tool's structured value, or None when the result has no ``structuredContent``.

        In memory (``mcpactor.testing.client``, ``connect_memory``) it is what the tool
        returned, of its annotated type: a dataclass, attrs class or TypedDict, a list of
        them, or the plain value (an ``int``, say) the server wrapped as
        ``{"result": ...}``. Over a real connection, and for an error result, it is the
        ``structuredContent`` JSON as it arrived, unwrapped from ``{"result": ...}`` for
        a tool whose outputSchema, in the client's last ``list_tools``, says it wraps.
        """
        data = self._data
        if data is _UNREAD:
            structured = self.get("structuredContent")
            decode = self._decode
            if structured is None or decode is None or self.is_error:
                data = structured
            else:
                data = decode(self._tool, structured)
            self._data = data
        return data

    def __reduce__(self) -> tuple[Any, ...]:
        # A copy or pickle is of the result and its tool; the decoder (a server's method)
        # stays with the client, so a copy's ``data`` is the JSON.
        return (ToolResult, (dict(self), self._tool))


class ToolOutputs:
    """What a session knows of its server's tools that decoding their values needs."""

    def __init__(self) -> None:
        #: the server's own decoder, when it runs in this process (set by the connection)
        self.server: OutputDecoder | None = None
        # The tools whose outputSchema (in the last tools/list) says their structured
        # content only wraps the value ({"result": value}): unwrapped over a connection.
        self._wrapped: frozenset[str] = frozenset()
        # taskId -> the tool it runs, for ``ClientTasks.result``
        self._task_tools: dict[str, str] = {}

    def listed(self, tools: list[JSONObject]) -> None:
        """Learn from a whole ``tools/list`` which tools wrap their value."""
        self._wrapped = frozenset(
            tool["name"]
            for tool in tools
            if type(tool) is dict
            and type(tool.get("name")) is str
            and type(tool.get("outputSchema")) is dict
            and tool["outputSchema"].get(WRAPPED_RESULT) is True
        )

    def started(self, task_id: str, tool: str) -> None:
        """Remember which tool a task runs."""
        tools = self._task_tools
        tools[task_id] = tool
        if len(tools) > _TASK_TOOLS:
            del tools[next(iter(tools))]

    def result(self, result: JSONObject, tool: str) -> ToolResult:
        """``result`` of a call of ``tool``, its value decoded as this session can."""
        return ToolResult(result, tool, self.decoder())

    def task_result(self, result: JSONObject, task_id: str) -> ToolResult:
        """``result`` of a task, decoded as its call's would be if its tool is known."""
        tool = self._task_tools.get(task_id)
        if tool is None:
            return ToolResult(result, "")
        return ToolResult(result, tool, self.decoder())

    def decoder(self) -> OutputDecoder | None:
        """In memory the server's own decoder; over a connection, unwrapping what
        tools/list said is wrapped."""
        if self.server is not None:
            return self.server
        return self._unwrap if self._wrapped else None

    def _unwrap(self, tool: str, structured: Any) -> Any:
        if tool in self._wrapped and type(structured) is dict and "result" in structured:
            return structured["result"]
        return structured
