"""Servers from OpenAPI 3.0/3.1 documents: one tool per operation, calls made over HTTP.

```python
from mcpactor.openapi import Route, from_openapi

server = from_openapi(
    "petstore.yaml",
    base_url="https://petstore3.swagger.io/api/v3",
    headers={"api_key": "special-key"},
    route_map=[Route("exclude", tags=["user"])],
)
```

Calls go through the HTTP client of the ``http`` extra; YAML documents need PyYAML:
``pip install 'mcpactor[openapi]'``.
"""

from ._document import OpenAPIError as OpenAPIError
from ._operations import Route as Route
from ._server import from_openapi as from_openapi

__all__ = ["OpenAPIError", "Route", "from_openapi"]

for _name in ("OpenAPIError", "Route"):
    globals()[_name].__module__ = __name__
del _name
