# Registration: a function and its options become a registry entry.
#
# Everything that can be worked out once is worked out here, at registration: the
# JSON Schemas from the signature, the compiled validators, how the function runs and
# the wire definition. A bad registration is a SchemaError naming what was registered;
# the Server only checks for names already taken and stores the entry.

from __future__ import annotations

from collections.abc import Callable, Container
from typing import TYPE_CHECKING, Any, Final

from .._exceptions import SchemaError
from ..protocol import JSONObject, describe, unstructure, wire_classes_loaded
from . import _results
from ._caching import CacheHint
from ._context import Context
from ._execution import tool_execution
from ._options import PromptOptions, ResourceOptions, ToolOptions
from ._registered import ToolEntry
from ._registry import (
    PromptEntry,
    ResourceEntry,
    StringBinder,
    TemplateEntry,
    compile_validator,
    description_of,
    is_async_callable,
    wire,
)
from ._schema import FunctionSchema, describe_function
from ._scopes import validate_scopes

if TYPE_CHECKING:
    from ._headers import HeaderParam
    from ._uritemplate import UriTemplate

__all__ = ["completer_context", "is_template", "prompt_entry", "resource_entry", "tool_entry"]

# What a tool may return that is content, not structured output.
#: the result classes a return annotation may name without an output schema: a content
#: block, a whole result or bytes (an annotation can only name the classes once they exist)
_SKIP_OUTPUT: Final = (*_results.CONTENT_TYPES, "CallToolResult", "GetPromptResult")
#: the keyword that mirrors a parameter into a header (``_headers.KEYWORD``)
_HEADER_KEYWORD: Final = "x-mcp-header"


def _names_a_header(schema: JSONObject) -> bool:
    # Whether the keyword is anywhere in the schema: only then can it declare a mirrored
    # parameter, and only then is _headers read (most tools declare none).
    stack: list[Any] = [schema]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if type(node) is dict:
            if _HEADER_KEYWORD in node:
                return True
            stack.extend(node.values())
        elif type(node) is list:
            stack.extend(node)
    return False


def _skip_output() -> tuple[type, ...]:
    return (*wire_classes_loaded(*_SKIP_OUTPUT), bytes)


def tool_entry(fn: Callable[..., Any], name: str, options: ToolOptions) -> ToolEntry:
    """The entry of tool ``name``; SchemaError if its schemas or options are unusable."""
    input_schema = options.get("input_schema")
    output_schema = options.get("output_schema")
    structured_output = options.get("structured_output")
    icons = options.get("icons")
    signature = describe_function(
        fn,
        context_types=(Context,),
        skip_output_types=_skip_output,
    )
    schema = input_schema if input_schema is not None else signature.input_schema
    if schema.get("type") != "object":
        raise SchemaError(
            f"tool {describe(name)}: inputSchema must have type 'object', "
            f"got {describe(schema.get('type'))}"
        )
    if output_schema is None and structured_output is not False:
        output_schema = signature.output_schema
    if structured_output is False:
        output_schema = None
    if output_schema is not None and output_schema.get("type") != "object":
        raise SchemaError(
            f"tool {describe(name)}: outputSchema must have type 'object', "
            f"got {describe(output_schema.get('type'))}"
        )
    what = f"tool {describe(name)}"
    scopes = validate_scopes(options.get("scopes"), what=what)
    headers: tuple[HeaderParam, ...] = ()
    if _names_a_header(schema):
        from ._headers import header_params

        headers = header_params(schema, what=what)
    execution = tool_execution(
        fn,
        name=name,
        is_async=is_async_callable(fn),
        context_param=signature.context_param,
        offload=options.get("offload"),
        timeout=options.get("timeout"),
        task_support=options.get("task_support", "forbidden"),
        task_after_input=options.get("task_after_input", False),
    )
    definition = wire(
        {
            "name": name,
            "title": options.get("title"),
            "description": description_of(fn, options.get("description")),
            "inputSchema": schema,
            "outputSchema": output_schema,
            "annotations": unstructure(options.get("annotations")),
            "icons": unstructure(list(icons)) if icons else None,
            "execution": execution.wire(),
            "_meta": options.get("meta"),
        }
    )
    return ToolEntry(
        name=name,
        fn=fn,
        is_async=is_async_callable(fn),
        signature=signature,
        # A parameter loaded from its JSON needs binding; else the arguments the schema
        # (additionalProperties: false) accepted are the keyword arguments as they are.
        binds_arguments=input_schema is None and signature.converts_arguments,
        input_validator=compile_validator(schema, what=f"{what} inputSchema"),
        output_validator=(
            compile_validator(output_schema, what=f"{what} outputSchema")
            if output_schema is not None
            else None
        ),
        definition=definition,
        context_param=signature.context_param,
        execution=execution,
        headers=headers,
        cache=_cache_option(options, what),
        scopes=scopes,
    )


def resource_entry(
    fn: Callable[..., Any],
    uri: str,
    options: ResourceOptions,
    *,
    resources: Container[str],
    templates: Container[str],
) -> ResourceEntry | TemplateEntry:
    """The entry of a resource, or of a template when ``uri`` has ``{variables}``.

    Raises:
        SchemaError: the function does not fit the URI, or the URI is in ``resources``
            (``templates`` for a template) already.
    """
    # Only the parameters matter: what the handler returns (bytes, content blocks)
    # never becomes an output schema.
    signature = describe_function(fn, context_types=(Context,), skip_output_types=(object,))
    icons = options.get("icons")
    common = {
        "name": options.get("name") or fn.__name__,
        "title": options.get("title"),
        "description": description_of(fn, options.get("description")),
        "mimeType": options.get("mime_type"),
        "annotations": unstructure(options.get("annotations")),
        "icons": unstructure(list(icons)) if icons else None,
        "_meta": options.get("meta"),
    }
    if is_template(uri):
        return _template_entry(fn, uri, options, signature, common, templates)
    what = f"resource {describe(uri)}"
    scopes = validate_scopes(options.get("scopes"), what=what)
    if signature.input_schema.get("required"):
        raise SchemaError(
            f"{what}: {fn.__name__}() takes arguments but the URI has no "
            "{variables}; use a URI template"
        )
    if uri in resources:
        raise SchemaError(f"{what} is already registered")
    return ResourceEntry(
        uri=uri,
        fn=fn,
        is_async=is_async_callable(fn),
        mime_type=options.get("mime_type"),
        definition=wire({"uri": uri, "size": options.get("size"), **common}),
        context_param=signature.context_param,
        cache=_cache_option(options, what),
        scopes=scopes,
    )


def _template_entry(
    fn: Callable[..., Any],
    uri: str,
    options: ResourceOptions,
    signature: FunctionSchema,
    common: JSONObject,
    templates: Container[str],
) -> TemplateEntry:
    what = f"resource template {describe(uri)}"
    scopes = validate_scopes(options.get("scopes"), what=what)
    template = _fitting_template(fn, uri, signature)
    if uri in templates:
        raise SchemaError(f"{what} is already registered")
    return TemplateEntry(
        template=template,
        fn=fn,
        is_async=is_async_callable(fn),
        mime_type=options.get("mime_type"),
        definition=wire({"uriTemplate": uri, **common}),
        context_param=signature.context_param,
        binder=StringBinder.build(signature, what=what),
        cache=_cache_option(options, what),
        scopes=scopes,
    )


def _fitting_template(fn: Callable[..., Any], uri: str, signature: FunctionSchema) -> UriTemplate:
    # The parsed template, once every variable is a parameter of the function and every
    # parameter without a default is a variable.
    from ._uritemplate import UriTemplate, UriTemplateError

    what = f"resource template {describe(uri)}"
    try:
        template = UriTemplate.parse(uri)
    except UriTemplateError as exc:
        # Every registration failure is a SchemaError, whatever found it.
        raise SchemaError(f"{what}: {exc}") from exc
    params = set(signature.input_schema.get("properties", {}))
    missing = [v for v in template.variables if v not in params]
    if missing:
        raise SchemaError(
            f"{what}: {fn.__name__}() has no parameter for {', '.join(map(repr, missing))}"
        )
    required = set(signature.input_schema.get("required", ()))
    extra = sorted(required - set(template.variables))
    if extra:
        raise SchemaError(
            f"{what}: parameters {extra} of {fn.__name__}() are not template variables and "
            "have no default"
        )
    return template


def prompt_entry(fn: Callable[..., Any], name: str, options: PromptOptions) -> PromptEntry:
    """The entry of prompt ``name``; its parameters are its (string) arguments."""
    icons = options.get("icons")
    scopes = validate_scopes(options.get("scopes"), what=f"prompt {describe(name)}")
    # Only the parameters matter: what the handler returns (bytes, content blocks)
    # never becomes an output schema.
    signature = describe_function(fn, context_types=(Context,), skip_output_types=(object,))
    properties: dict[str, Any] = signature.input_schema.get("properties", {})
    required = frozenset(signature.input_schema.get("required", ()))
    arguments = []
    choices: dict[str, tuple[str, ...]] = {}
    for arg, prop in properties.items():
        arguments.append(
            wire(
                {
                    "name": arg,
                    "title": prop.get("title"),
                    "description": prop.get("description"),
                    "required": arg in required,
                }
            )
        )
        enum = prop.get("enum")
        if isinstance(enum, list):
            choices[arg] = tuple(str(option) for option in enum)
    return PromptEntry(
        name=name,
        fn=fn,
        is_async=is_async_callable(fn),
        definition=wire(
            {
                "name": name,
                "title": options.get("title"),
                "description": description_of(fn, options.get("description")),
                "arguments": arguments or None,
                "icons": unstructure(list(icons)) if icons else None,
                "_meta": options.get("meta"),
            }
        ),
        context_param=signature.context_param,
        required=required,
        binder=StringBinder.build(signature, what=f"prompt {describe(name)}"),
        choices=choices,
        scopes=scopes,
    )


def _cache_option(options: ToolOptions | ResourceOptions, what: str) -> CacheHint | None:
    cache = options.get("cache")
    if cache is not None and not isinstance(cache, CacheHint):
        raise SchemaError(f"{what}: cache must be a CacheHint, got {type(cache).__name__}")
    return cache


def completer_context(fn: Callable[..., Any]) -> str | None:
    """The name of a completer's Context parameter, or None; read once, at registration."""
    return describe_function(fn, context_types=(Context,)).context_param


def is_template(uri: str) -> bool:
    """Whether ``uri`` is a URI template (it has an expression), not a plain URI."""
    # A URI without "{" has no expression: _uritemplate is loaded only for templates.
    if "{" not in uri:
        return False
    from ._uritemplate import is_uri_template

    return is_uri_template(uri)
