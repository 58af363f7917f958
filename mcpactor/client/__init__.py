"""A trio MCP client: in memory for tests; over stdio, Streamable HTTP or WebSocket.

```python
async with connect_memory(server, initialize=True) as client:
    result = await client.call_tool("forecast", {"city": "Oslo"})
    assert result.data == Forecast(city="Oslo", sky="sun")
```
"""

from typing import TYPE_CHECKING, Any

from ._connect import connect_memory as connect_memory
from ._connect import connect_stdio as connect_stdio
from ._connect import connect_streams as connect_streams
from ._errors import RequestCancelled as RequestCancelled
from ._handlers import ClientHandlers as ClientHandlers
from ._handlers import ClientMessageHook as ClientMessageHook
from ._handlers import ElicitationHandler as ElicitationHandler
from ._handlers import ProgressHandler as ProgressHandler
from ._handlers import RootsSource as RootsSource
from ._handlers import SamplingHandler as SamplingHandler
from ._handlers import ServerMessageHook as ServerMessageHook
from ._http import connect_http as connect_http
from ._notifications import NotificationInbox as NotificationInbox
from ._notifications import NotificationPredicate as NotificationPredicate
from ._proxy import Connector as Connector
from ._proxy import ProxyServer as ProxyServer
from ._proxy import proxy_stdio as proxy_stdio
from ._proxy import proxy_url as proxy_url
from ._proxy_link import RemoteLink as RemoteLink
from ._results import ToolResult as ToolResult
from ._rounds import HeaderMismatch as HeaderMismatch
from ._rounds import MissingClientCapability as MissingClientCapability
from ._rounds import UnsupportedProtocolVersion as UnsupportedProtocolVersion
from ._server_view import ServerView as ServerView
from ._session import ClientArgs as ClientArgs
from ._session import ClientSession as ClientSession
from ._session import ClientStatistics as ClientStatistics
from ._session import open_client_session as open_client_session
from ._stateless import AUTO as AUTO
from ._subscription import Subscription as Subscription
from ._tasks import ClientTasks as ClientTasks
from ._websocket import connect_websocket as connect_websocket

if TYPE_CHECKING:
    from ._http11 import HttpPool as HttpPool
    from ._http11 import HttpResponse as HttpResponse
    from ._http11 import Url as Url

__all__ = [
    "AUTO",
    "ClientArgs",
    "ClientHandlers",
    "ClientMessageHook",
    "ClientSession",
    "ClientStatistics",
    "ClientTasks",
    "Connector",
    "ElicitationHandler",
    "HeaderMismatch",
    "HttpPool",
    "HttpResponse",
    "MissingClientCapability",
    "NotificationInbox",
    "NotificationPredicate",
    "ProgressHandler",
    "ProxyServer",
    "RemoteLink",
    "RequestCancelled",
    "RootsSource",
    "SamplingHandler",
    "ServerMessageHook",
    "ServerView",
    "Subscription",
    "ToolResult",
    "UnsupportedProtocolVersion",
    "Url",
    "connect_http",
    "connect_memory",
    "connect_stdio",
    "connect_streams",
    "connect_websocket",
    "open_client_session",
    "proxy_stdio",
    "proxy_url",
]

for _name in (
    "ClientHandlers",
    "ClientSession",
    "ClientStatistics",
    "ClientTasks",
    "HeaderMismatch",
    "MissingClientCapability",
    "NotificationInbox",
    "ProxyServer",
    "RemoteLink",
    "RequestCancelled",
    "ServerView",
    "Subscription",
    "ToolResult",
    "UnsupportedProtocolVersion",
):
    globals()[_name].__module__ = __name__
del _name

#: the HTTP/1.1 connection pool's names: it needs h11 (the http extra), so it is
#: imported on first use
_HTTP11 = frozenset({"HttpPool", "HttpResponse", "Url"})


def __getattr__(name: str) -> Any:
    if name in _HTTP11:
        from . import _http11

        return getattr(_http11, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
