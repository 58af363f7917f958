"""An HTTP API served as MCP tools, from its OpenAPI document.

    pip install 'mcpactor[openapi]'
    export LIBRARY_URL=http://127.0.0.1:8080/api LIBRARY_TOKEN=...
    mcpactor serve examples/openapi_server.py

Every operation of ``openapi/library.yaml`` becomes a tool, except those tagged
``admin``; looking a book up by ISBN is a resource template instead
(``https://…/books/{isbn}``). Each call goes to the API with the token as a header.
"""

import os
from pathlib import Path

from mcpactor.openapi import Route, from_openapi

server = from_openapi(
    Path(__file__).parent / "openapi" / "library.yaml",
    name="library",
    # The document's server URL unless the environment names another.
    base_url=os.environ.get("LIBRARY_URL"),
    headers={"Authorization": f"Bearer {os.environ.get('LIBRARY_TOKEN', 'demo')}"},
    route_map=[
        Route("exclude", tags=["admin"]),
        Route("resource", operation_ids=["getBook"]),
    ],
    timeout=10.0,
)
