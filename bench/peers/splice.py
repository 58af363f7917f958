"""JSON-RPC replies of the framework-free servers, spliced from bytes.

A ceiling should do the least work a correct reply needs: the hot path (echo) builds no
containers, so that the cycle collector has nothing to do either.
"""

from __future__ import annotations

import orjson
from contract import ECHO_TOOLS, canned_call

ECHO_BEFORE = b'{"content":[{"type":"text","text":'
ECHO_AFTER = b'}],"isError":false}'


def response(request_id: object, result: bytes) -> bytes:
    """A JSON-RPC response carrying an already serialised result."""
    return b'{"jsonrpc":"2.0","id":' + orjson.dumps(request_id) + b',"result":' + result + b"}"


def call_result(params: object) -> bytes:
    """The serialised result of a tools/call other than sleep."""
    if isinstance(params, dict):
        arguments = params.get("arguments")
        if params.get("name") in ECHO_TOOLS and isinstance(arguments, dict):
            return ECHO_BEFORE + orjson.dumps(str(arguments.get("text", ""))) + ECHO_AFTER
        return orjson.dumps(canned_call(params))
    return orjson.dumps(canned_call({}))
