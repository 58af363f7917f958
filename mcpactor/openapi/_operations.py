# The operations of a document, each described once: its tool name, its input schema
# (parameters by name, the request body as ``body``) and its output schema, and where
# each argument goes in the HTTP request. Route maps choose what each becomes.

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, Literal

import attrs

from ._document import Document, OpenAPIError

__all__ = ["Body", "Operation", "Parameter", "Route", "operations", "route_of"]

METHODS: Final = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_NOT_A_NAME: Final = re.compile(r"[^A-Za-z0-9_.-]+")
_STYLES: Final = {"path": "simple", "query": "form", "header": "simple", "cookie": "form"}

Kind = Literal["tool", "resource", "exclude"]


@attrs.frozen
class Parameter:
    """An argument that goes into the path, query, a header or a cookie."""

    name: str
    location: str  # path, query, header, cookie
    #: the tool argument's name (the parameter's, unless two locations share it)
    argument: str
    style: str
    explode: bool
    allow_reserved: bool = False


@attrs.frozen
class Body:
    """The request body: sent as ``media_type``, from the ``body`` argument."""

    media_type: str
    required: bool
    #: the tool argument holding it (``body``, unless a parameter took that name)
    argument: str = "body"


@attrs.frozen
class Operation:
    """One operation of the document, ready to be a tool or a resource."""

    method: str
    path: str
    name: str
    operation_id: str | None
    tags: tuple[str, ...]
    description: str | None
    parameters: tuple[Parameter, ...]
    body: Body | None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None


@attrs.frozen
class Route:
    """What operations matching every given criterion become: the first match decides.

    ``methods`` (e.g. ``("GET",)``), ``pattern`` (a regular expression searched in the
    path), ``tags`` (any of them) and ``operation_ids``; ``kind`` is ``"tool"``,
    ``"resource"`` (a GET without parameters, or with path parameters only: a resource
    template) or ``"exclude"``.
    """

    kind: Kind = "tool"
    methods: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    pattern: str | None = None
    tags: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    operation_ids: tuple[str, ...] = attrs.field(default=(), converter=tuple)

    def __attrs_post_init__(self) -> None:
        if self.kind not in ("tool", "resource", "exclude"):
            raise OpenAPIError(f"a route's kind is tool, resource or exclude, not {self.kind!r}")
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise OpenAPIError(f"route pattern {self.pattern!r}: {exc}") from exc

    def matches(self, operation: Operation) -> bool:
        """Whether ``operation`` meets every criterion this route gives."""
        if self.methods and operation.method.upper() not in {m.upper() for m in self.methods}:
            return False
        if self.pattern is not None and not re.search(self.pattern, operation.path):
            return False
        if self.tags and not set(self.tags) & set(operation.tags):
            return False
        return not self.operation_ids or operation.operation_id in self.operation_ids


def route_of(operation: Operation, routes: Sequence[Route]) -> Kind:
    """The kind the first matching route gives ``operation`` (a tool without one)."""
    for route in routes:
        if route.matches(operation):
            return route.kind
    return "tool"


def operations(document: Document, names: Mapping[str, str]) -> Iterator[Operation]:
    """Every operation under ``paths``, in the document's order (webhooks are not)."""
    taken: set[str] = set()
    for path, item in document.data.get("paths", {}).items():
        item = document.resolve(item, f"paths {path}")
        if not isinstance(item, dict):
            continue
        shared = item.get("parameters", [])
        for method in METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            where = f"{method.upper()} {path}"
            operation = _operation(document, method, path, op, shared, where, names)
            if operation.name in taken:
                raise OpenAPIError(
                    f"{document.origin}: {where}: the tool name {operation.name!r} is taken "
                    "by another operation; give one of them a name in names="
                )
            taken.add(operation.name)
            yield operation


def tool_name(method: str, path: str, operation_id: str | None) -> str:
    """The operationId, else method and path, in the characters tool names allow."""
    if operation_id:
        name = _NOT_A_NAME.sub("_", operation_id).strip("_") or method
    else:
        name = "_".join(part for part in _NOT_A_NAME.split(f"{method}/{path}") if part)
    return name[:128]


def _operation(
    document: Document,
    method: str,
    path: str,
    op: dict[str, Any],
    shared: Any,
    where: str,
    names: Mapping[str, str],
) -> Operation:
    operation_id = op.get("operationId") if isinstance(op.get("operationId"), str) else None
    name = names.get(operation_id or "") or names.get(f"{method.upper()} {path}")
    name = name or tool_name(method, path, operation_id)
    properties: dict[str, Any] = {}
    required: list[str] = []
    parameters: list[Parameter] = []
    for spec in _parameters(document, shared, op.get("parameters", []), where):
        location, pname = spec["in"], spec["name"]
        argument = pname if pname not in properties else f"{pname}__{location}"
        schema = _parameter_schema(document, spec, f"{where} parameter {pname}")
        properties[argument] = schema
        if spec.get("required") or location == "path":
            required.append(argument)
        style = spec.get("style", _STYLES.get(location, "simple"))
        parameters.append(
            Parameter(
                name=pname,
                location=location,
                argument=argument,
                style=str(style),
                explode=bool(spec.get("explode", style == "form")),
                allow_reserved=bool(spec.get("allowReserved", False)),
            )
        )
    body = None
    request_body = document.resolve(op.get("requestBody"), f"{where} requestBody")
    if isinstance(request_body, dict) and isinstance(request_body.get("content"), dict):
        media_type, media = _pick_media(request_body["content"])
        if media_type is not None:
            schema = document.schema(media.get("schema", {}), f"{where} requestBody")
            if isinstance(request_body.get("description"), str) and "description" not in schema:
                schema = {**schema, "description": request_body["description"]}
            argument = "body" if "body" not in properties else "body__request"
            properties[argument] = schema
            body = Body(media_type, bool(request_body.get("required", False)), argument)
            if body.required:
                required.append(argument)
    input_schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        input_schema["required"] = required
    input_schema = _hoist_defs(input_schema)
    summary, text = op.get("summary"), op.get("description")
    parts = [p for p in (summary, text) if isinstance(p, str) and p.strip()]
    if len(parts) == 2 and parts[1].startswith(parts[0]):
        parts = parts[1:]
    return Operation(
        method=method,
        path=path,
        name=name,
        operation_id=operation_id,
        tags=tuple(t for t in op.get("tags", ()) if isinstance(t, str)),
        description="\n\n".join(parts) or None,
        parameters=tuple(parameters),
        body=body,
        input_schema=input_schema,
        output_schema=_output_schema(document, op, where),
    )


def _parameters(document: Document, shared: Any, own: Any, where: str) -> list[dict[str, Any]]:
    # The path item's parameters, replaced by the operation's of the same name and place.
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for raw in [
        *(shared if isinstance(shared, list) else ()),
        *(own if isinstance(own, list) else ()),
    ]:
        spec = document.resolve(raw, f"{where} parameters")
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            raise OpenAPIError(f"{document.origin}: {where}: a parameter without a name")
        if spec.get("in") not in _STYLES:
            raise OpenAPIError(
                f"{document.origin}: {where}: parameter {spec['name']!r} is 'in' "
                f"{spec.get('in')!r}; expected path, query, header or cookie"
            )
        found[(spec["name"], spec["in"])] = spec
    return list(found.values())


def _parameter_schema(document: Document, spec: dict[str, Any], where: str) -> dict[str, Any]:
    raw = spec.get("schema")
    if raw is None and isinstance(spec.get("content"), dict) and spec["content"]:
        raw = next(iter(spec["content"].values())).get("schema")
    schema = document.schema(raw if raw is not None else {}, where)
    if (
        isinstance(spec.get("description"), str)
        and spec["description"]
        and "description" not in schema
    ):
        schema = {**schema, "description": spec["description"]}
    return schema


def _pick_media(content: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    # JSON first, then a form, then whatever the document lists first.
    kinds = list(content)
    for wanted in (
        lambda m: m.split(";")[0].strip() == "application/json",
        lambda m: m.split(";")[0].strip().endswith("+json"),
        lambda m: m.startswith("application/x-www-form-urlencoded"),
        lambda m: True,
    ):
        for media_type in kinds:
            if wanted(media_type) and isinstance(content[media_type], dict):
                return media_type, content[media_type]
    return None, {}


def _output_schema(document: Document, op: dict[str, Any], where: str) -> dict[str, Any] | None:
    responses = op.get("responses")
    if not isinstance(responses, dict):
        return None
    for key, raw in sorted(responses.items(), key=lambda item: str(item[0])):
        status = str(key)
        if not (status.startswith("2") and len(status) == 3):
            continue
        response = document.resolve(raw, f"{where} response {status}")
        content = response.get("content") if isinstance(response, dict) else None
        if not isinstance(content, dict):
            return None
        for media_type, media in content.items():
            if media_type.split(";")[0].strip() == "application/json" and isinstance(media, dict):
                schema = document.schema(media.get("schema", {}), f"{where} response {status}")
                return schema if _is_object(schema) else None
        return None
    return None


def _hoist_defs(schema: dict[str, Any]) -> dict[str, Any]:
    # Each argument's cycles were put in its own $defs; the references say #/$defs/…,
    # which means the tool schema's root: gather them there.
    defs: dict[str, Any] = {}
    properties = {}
    for name, prop in schema["properties"].items():
        if isinstance(prop, dict) and "$defs" in prop:
            prop = dict(prop)
            defs.update(prop.pop("$defs"))
        properties[name] = prop
    if not defs:
        return schema
    return {**schema, "properties": properties, "$defs": defs}


def _is_object(schema: dict[str, Any]) -> bool:
    # An object schema, or an allOf with one (the instance must then be an object too:
    # the root says so, as a tool's outputSchema must).
    if schema.get("type") == "object":
        return True
    parts = schema.get("allOf")
    if "type" in schema or not isinstance(parts, list):
        return False
    if any(isinstance(p, dict) and p.get("type") == "object" for p in parts):
        schema["type"] = "object"
        return True
    return False
