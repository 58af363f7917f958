# The admin listener's ``/metrics``: the process's counters for Prometheus to scrape.
#
# Added to every admin app through ``add_routes``, so it sits behind the admin
# credential like every other route (a scraper sends it as a bearer token:
# ``authorization: {credentials_file: ...}`` in the scrape config).

from __future__ import annotations

from quart import Response
from quart_trio import QuartTrio

from ..observability import CONTENT_TYPE, render_metrics
from ..runtime import Observatory
from ._app import add_routes

__all__ = ["add_metrics_route", "install_metrics_route"]


def add_metrics_route(app: QuartTrio, observatory: Observatory | None = None) -> None:
    """Serve ``GET /metrics`` on ``app``: the Prometheus text of the process's counters.

    With ``observatory``, also the requests in flight at the scrape, read from the live
    tree (the requests of sessions and the stateless ones; listen streams are not).
    """

    @app.get("/metrics")
    async def metrics() -> Response:
        in_flight = None
        if observatory is not None:
            counts = observatory.snapshot(limit=0)["counts"]
            in_flight = counts["requests"] + counts["stateless"]
        return Response(render_metrics(in_flight=in_flight), status=200, content_type=CONTENT_TYPE)


def install_metrics_route() -> None:
    """Have every admin app made from now on serve ``/metrics``."""
    add_routes(add_metrics_route)
