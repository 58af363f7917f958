# An OpenAPI document: loaded from a file, a URL or a mapping, and its ``$ref``s followed.
#
# Only local references (``#/components/...``, any JSON pointer into the document) are
# followed; a reference to another file or URL is refused with the place it was met, since
# fetching more documents while building a server is a surprise nobody asked for. A schema
# becomes JSON Schema 2020-12 (``schema``): references are inlined, except those on a
# cycle, which become ``#/$defs/...`` entries of the tool's schema; a 3.0 document's
# ``nullable`` and boolean ``exclusiveMinimum``/``exclusiveMaximum`` take their 2020-12
# form. ``oneOf``/``anyOf``/``allOf`` are kept as they are.

from __future__ import annotations

import re
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import orjson

from .._exceptions import MCPActorError
from ..protocol import describe

__all__ = ["Document", "OpenAPIError", "load_document"]

#: the largest document read from a file or URL
MAX_DOCUMENT_BYTES: Final = 32 * 1024 * 1024
_NOT_A_DEF: Final = re.compile(r"[^A-Za-z0-9_.-]")


class OpenAPIError(MCPActorError, ValueError):
    """An OpenAPI document that cannot be read or served (the message says where)."""


def load_document(source: str | Path | Mapping[str, Any], *, timeout: float = 30.0) -> Any:
    """The parsed document: a mapping as given, a file's or a URL's JSON or YAML."""
    if isinstance(source, Mapping):
        return dict(source)
    text = str(source)
    if text.startswith(("http://", "https://")):
        request = urllib.request.Request(text, headers={"accept": "application/json, */*"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                raw = answer.read(MAX_DOCUMENT_BYTES + 1)
        except OSError as exc:
            raise OpenAPIError(
                f"cannot fetch the OpenAPI document {describe(text)}: {exc}"
            ) from exc
    else:
        path = Path(text)
        try:
            with path.open("rb") as file:
                raw = file.read(MAX_DOCUMENT_BYTES + 1)
        except OSError as exc:
            raise OpenAPIError(f"cannot read the OpenAPI document {text!r}: {exc}") from exc
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise OpenAPIError(f"the OpenAPI document {text!r} exceeds {MAX_DOCUMENT_BYTES} bytes")
    return _parse(raw, text)


def _parse(raw: bytes, origin: str) -> Any:
    if raw.lstrip()[:1] in (b"{", b"["):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise OpenAPIError(f"{origin!r} is not valid JSON: {exc}") from exc
    try:
        import yaml  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        raise OpenAPIError(
            f"{origin!r} is YAML: install mcpactor[openapi] (PyYAML) to read it, "
            "or give the document as JSON"
        ) from None
    try:
        # CSafeLoader where built: a large document parses in a fraction of the time.
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        return yaml.load(raw, Loader=loader)
    except yaml.YAMLError as exc:
        raise OpenAPIError(f"{origin!r} is not valid YAML: {str(exc)[:500]}") from exc


class Document:
    """A checked OpenAPI 3.0/3.1 document whose references can be followed."""

    def __init__(self, data: Any, origin: str = "the document") -> None:
        if not isinstance(data, dict):
            raise OpenAPIError(f"{origin}: expected an OpenAPI object, got {describe(data)}")
        version = data.get("openapi")
        if not isinstance(version, str) or not re.match(r"3\.[01]\.", version + "."):
            hint = " (Swagger 2.0 is not read: convert it to 3.x)" if "swagger" in data else ""
            raise OpenAPIError(
                f"{origin}: expected 'openapi: 3.0.x' or '3.1.x', got {describe(version)}{hint}"
            )
        if not isinstance(data.get("paths", {}), dict):
            raise OpenAPIError(f"{origin}: 'paths' must be an object")
        self.data: dict[str, Any] = data
        self.origin = origin
        #: a 3.0 document: ``nullable`` and boolean exclusive bounds are rewritten
        self.legacy = version.startswith("3.0")

    # --- references -----------------------------------------------------------------

    def pointer(self, ref: str, where: str) -> Any:
        """What the local reference ``ref`` points at."""
        if not ref.startswith("#"):
            raise OpenAPIError(
                f"{self.origin}: {where}: the reference {describe(ref)} is to another "
                "document; only local references ('#/components/...') are followed"
            )
        node: Any = self.data
        fragment = urllib.parse.unquote(ref[1:])
        for part in fragment.split("/")[1:] if fragment else ():
            key = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and key in node:
                node = node[key]
            elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            else:
                raise OpenAPIError(f"{self.origin}: {where}: {describe(ref)} points at nothing")
        return node

    def resolve(self, node: Any, where: str) -> Any:
        """``node`` with its ``$ref`` chain followed (a parameter, body or response)."""
        seen: list[str] = []
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if ref in seen:
                chain = " -> ".join([*seen, ref])
                raise OpenAPIError(f"{self.origin}: {where}: the references loop: {chain}")
            seen.append(ref)
            node = self.pointer(ref, where)
        return node

    # --- schemas --------------------------------------------------------------------

    def schema(self, node: Any, where: str) -> dict[str, Any]:
        """``node`` as a JSON Schema 2020-12 object, references inlined or in ``$defs``."""
        converter = _Schemas(self, where)
        converted = converter.convert(node, ())
        if not isinstance(converted, dict):
            converted = {} if converted is True else {"not": {}}
        if converter.defs:
            converted = {**converted, "$defs": {**converted.get("$defs", {}), **converter.defs}}
        return converted


class _Schemas:
    # One schema's conversion: the references met on the way down (to find cycles) and
    # the definitions the cycles need.

    def __init__(self, document: Document, where: str) -> None:
        self.document = document
        self.where = where
        self.defs: dict[str, Any] = {}
        self._names: dict[str, str] = {}

    def convert(self, node: Any, stack: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [self.convert(item, stack) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            if ref in stack:
                return {"$ref": f"#/$defs/{self._define(ref)}"}
            target = self.document.pointer(ref, self.where)
            converted = self.convert(target, (*stack, ref))
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            if siblings and isinstance(converted, dict):
                # 3.1 allows keywords beside $ref (a description, mostly): both apply.
                return {"allOf": [converted], **self.convert(siblings, stack)}
            return converted
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("properties", "patternProperties", "$defs", "definitions") and isinstance(
                value, dict
            ):
                out[key] = {name: self.convert(sub, stack) for name, sub in value.items()}
            elif key in ("example", "examples", "enum", "const", "default", "xml"):
                out[key] = value
            else:
                out[key] = self.convert(value, stack)
        return _modern(out) if self.document.legacy else out

    def _define(self, ref: str) -> str:
        name = self._names.get(ref)
        if name is not None:
            return name
        base = _NOT_A_DEF.sub("_", ref.rpartition("/")[2]) or "schema"
        name, count = base, 1
        while name in self.defs:
            count += 1
            name = f"{base}_{count}"
        self._names[ref] = name
        self.defs[name] = {}  # taken before converting, for a cycle through itself
        self.defs[name] = self.convert(self.document.pointer(ref, self.where), (ref,))
        return name


def _modern(schema: dict[str, Any]) -> dict[str, Any]:
    # OpenAPI 3.0's dialect in 2020-12 words.
    for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        flag = schema.get(bound)
        if isinstance(flag, bool):
            del schema[bound]
            if flag and limit in schema:
                schema[bound] = schema.pop(limit)
    if schema.pop("nullable", False) is True:
        kind = schema.get("type")
        if isinstance(kind, str):
            schema["type"] = [kind, "null"]
            if isinstance(schema.get("enum"), list) and None not in schema["enum"]:
                schema["enum"] = [*schema["enum"], None]
        elif kind is None:
            return {"anyOf": [schema, {"type": "null"}]}
    return schema
