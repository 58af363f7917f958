"""A real HTTP server on loopback that answers an OpenAPI document's operations.

Its data is canned: each answer is the success response's example in the document, or
the least instance of the response's schema. The HTTP layer is real (the standard
library's threading server) and every request's method, path, query, headers and body
is recorded. A request whose query or path holds ``slow`` is held open until the client
goes away, which is recorded as well; one for the id ``404`` is answered with 404.
"""

from __future__ import annotations

import http.server
import json
import re
import select
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import yaml

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


@attrs.frozen
class Recorded:
    """One request as the API received it."""

    method: str
    path: str
    query: list[tuple[str, str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@attrs.define
class Api:
    """The server's address and what it received."""

    base_url: str
    document: dict[str, Any]
    requests: list[Recorded] = attrs.field(factory=list)
    #: set when a held request arrives, and when its client goes away
    held: threading.Event = attrs.field(factory=threading.Event)
    released: threading.Event = attrs.field(factory=threading.Event)


def load(path: Path) -> dict[str, Any]:
    """A document as the test reads it: with PyYAML, independently of mcpactor."""
    return yaml.safe_load(path.read_text())


def operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(method, path, operation) for every operation of ``document``."""
    for path, item in document["paths"].items():
        for method in METHODS:
            if method in item:
                yield method, path, item[method]


def _pointer(document: dict[str, Any], node: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        target: Any = document
        for part in node["$ref"][2:].split("/"):
            target = target[part]
        node = target
    return node


def least(document: dict[str, Any], schema: Any) -> Any:
    """The smallest instance of ``schema``: required properties only, first enum values."""
    schema = _pointer(document, schema)
    if not isinstance(schema, dict):
        return {}
    if "example" in schema:
        return schema["example"]
    if "enum" in schema:
        return schema["enum"][0]
    if "allOf" in schema:
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            value = least(document, part)
            if isinstance(value, dict):
                merged.update(value)
        return merged
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return least(document, schema[key][0])
    kind = schema.get("type", "object")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: least(document, properties[name]) for name in schema.get("required", ())}
    return {"array": [], "string": "x", "integer": 1, "number": 1.5, "boolean": True}.get(kind)


def canned(document: dict[str, Any], operation: dict[str, Any]) -> tuple[int, Any]:
    """The status and JSON the API answers ``operation`` with."""
    for status, response in sorted(operation.get("responses", {}).items(), key=str):
        if not str(status).startswith("2"):
            continue
        response = _pointer(document, response)
        media = response.get("content", {}).get("application/json")
        if media is None:
            return int(status), None
        if "example" in media:
            return int(status), media["example"]
        if media.get("examples"):
            example = _pointer(document, next(iter(media["examples"].values())))
            return int(status), example["value"]
        return int(status), least(document, media.get("schema", {}))
    return 200, None


def _route(document: dict[str, Any], prefix: str, method: str, path: str) -> dict[str, Any] | None:
    for op_method, template, operation in operations(document):
        pattern = re.sub(r"\\{[^/]+?\\}", "[^/]+", re.escape(template))
        if op_method == method and re.fullmatch(re.escape(prefix) + pattern, path):
            return operation
    return None


@contextmanager
def serving(document_path: Path, prefix: str = "") -> Iterator[Api]:
    """Serve the document's operations on a loopback port until the block ends."""
    document = load(document_path)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    api = Api(f"http://127.0.0.1:{server.server_address[1]}{prefix}", document)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _serve(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            method = self.command.lower()
            recorded = Recorded(
                method=self.command,
                path=url.path,
                query=urllib.parse.parse_qsl(url.query, keep_blank_values=True),
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
            )
            api.requests.append(recorded)
            if "slow" in url.query or "slow" in url.path:
                api.held.set()
                # Held until the client closes the connection: EOF on the socket.
                while True:
                    readable, _, _ = select.select([self.connection], [], [], 30)
                    if not readable or not self.connection.recv(1):
                        break
                api.released.set()
                self.close_connection = True
                return
            operation = _route(document, prefix, method, url.path)
            if operation is None:
                status, answer = 404, {"message": f"no operation {method} {url.path}"}
            elif url.path.rstrip("/").endswith("/404"):
                status, answer = 404, {"code": 404, "message": "Pet not found"}
            else:
                status, answer = canned(document, operation)
            payload = b"" if answer is None else json.dumps(answer).encode()
            self.send_response(status)
            if payload:
                self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve

    server.RequestHandlerClass = Handler
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
