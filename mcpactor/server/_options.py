# The registration options of tools, resources and prompts, each written once.
#
# ``Server.tool`` and ``Server.add_tool`` (and the resource and prompt pairs) take these
# as ``**options: Unpack[...]``: type checkers and editors see every keyword with its
# type, and a keyword that is not an option is a TypeError at once, as it was when each
# method spelled the list out.

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar

from ..protocol import JSONObject
from ._caching import CacheHint
from ._execution import TaskSupport

if TYPE_CHECKING:
    # A tool's hints are the user's to build: the class loads when they import it.
    from ..protocol import Icon, ToolAnnotations

__all__ = ["PromptOptions", "ResourceOptions", "ToolOptions", "check_options", "registrar"]

F = TypeVar("F", bound=Callable[..., Any])


class ToolOptions(TypedDict, total=False):
    """The keywords of ``Server.tool`` and ``Server.add_tool`` besides ``name``."""

    title: str | None
    description: str | None
    annotations: ToolAnnotations | None
    icons: Sequence[Icon] | None
    meta: JSONObject | None
    input_schema: JSONObject | None
    output_schema: JSONObject | None
    structured_output: bool | None
    task_support: TaskSupport
    task_after_input: bool
    offload: Literal["thread", "process"] | None
    timeout: float | None
    cache: CacheHint | None
    scopes: Sequence[str] | None


class ResourceOptions(TypedDict, total=False):
    """The keywords of ``Server.resource`` and ``Server.add_resource``."""

    name: str | None
    title: str | None
    description: str | None
    mime_type: str | None
    size: int | None
    annotations: Any
    icons: Sequence[Icon] | None
    meta: JSONObject | None
    cache: CacheHint | None
    scopes: Sequence[str] | None


class PromptOptions(TypedDict, total=False):
    """The keywords of ``Server.prompt`` and ``Server.add_prompt`` besides ``name``."""

    title: str | None
    description: str | None
    icons: Sequence[Icon] | None
    meta: JSONObject | None
    scopes: Sequence[str] | None


def check_options(method: str, allowed: type[Any], options: Mapping[str, Any]) -> None:
    """Raise TypeError, as Python would, if ``options`` has a keyword ``allowed`` lacks."""
    keys: frozenset[str] = allowed.__optional_keys__
    for key in options:
        if key not in keys:
            raise TypeError(f"Server.{method}() got an unexpected keyword argument {key!r}")


def registrar(add: Callable[..., object], /, *args: Any, **kwargs: Any) -> Callable[[F], F]:
    """A decorator that registers its function with ``add(fn, *args, **kwargs)``."""

    def register(fn: F) -> F:
        add(fn, *args, **kwargs)
        return fn

    return register
