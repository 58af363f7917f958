# What one Server registered itself: its tools, resources, templates, prompts and
# completers, and what is worked out from them alone.
#
# The Server fills the ``Registry`` (its ``tool``/``resource``/``prompt`` decorators build
# the entries in _registration.py); the request handlers (_handlers.py) read the same
# dicts. What a server serves once it mounts others is its composition's business
# (_compose.py): it asks the registry only for the parent's own entries.

from __future__ import annotations

from collections.abc import Callable, Sized
from typing import Any

from ..protocol import JSONObject, Revision
from . import _tasks
from ._registry import Catalog, PromptEntry, ResourceEntry, TemplateEntry, ToolEntry

__all__ = ["Completer", "Registry", "serves_family"]

#: a completion handler, with the name of its Context parameter or None
Completer = Callable[..., Any]


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
            capabilities["tasks"] = _tasks.tasks_capability()
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
