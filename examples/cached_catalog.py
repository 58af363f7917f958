"""Cache hints and header-mirrored parameters (both read at 2026-07-28).

A 2026-07-28 client may keep a list or a read for ``ttlMs`` milliseconds, shared with
others if its ``cacheScope`` is ``"public"``. The server sets a default (``cache=`` on
``Server``), and a tool, resource or template may set its own; a list is as fresh as its
stalest entry and private if any entry is. Sessions get no hints.

``Header("Region")`` on a parameter asks Streamable HTTP clients to send its value as
the ``Mcp-Param-Region`` header too, so a gateway can route by region without parsing
the body; the server checks that header and body agree.

Serve it with ``mcpactor serve examples/cached_catalog.py --http 8000``.
"""

from __future__ import annotations

from typing import Annotated, Final

import trio

from mcpactor import Server
from mcpactor.server import CacheHint, Header
from mcpactor.transports import serve_stdio

MINUTE: Final = 60_000

# Private and short by default: what a user sees may depend on who they are.
server = Server("catalog", version="1.0.0", cache=CacheHint(ttl_ms=MINUTE))

PRICES: Final = {
    ("eu", "kettle"): "EUR 39",
    ("eu", "toaster"): "EUR 45",
    ("us", "kettle"): "USD 42",
    ("us", "toaster"): "USD 49",
}


@server.resource(
    "catalog://products",
    mime_type="application/json",
    cache=CacheHint(ttl_ms=60 * MINUTE, scope="public"),
)
async def products() -> dict[str, list[str]]:
    """The product names: the same for everyone, and stable for an hour."""
    return {"products": sorted({product for _, product in PRICES})}


@server.resource("catalog://price/{region}/{product}", cache=CacheHint(5 * MINUTE, "public"))
async def price_page(region: str, product: str) -> str:
    """One price, by region and product."""
    return PRICES.get((region, product), "unknown")


@server.tool(cache=CacheHint(ttl_ms=5 * MINUTE))
async def price(
    region: Annotated[str, Header("Region")],
    product: str,
) -> str:
    """The price of a product in a region (eu or us).

    Args:
        region: where the customer is; also sent as the Mcp-Param-Region header
        product: kettle or toaster
    """
    return PRICES.get((region.lower(), product.lower()), f"no {product} in {region}")


if __name__ == "__main__":
    trio.run(serve_stdio, server)
