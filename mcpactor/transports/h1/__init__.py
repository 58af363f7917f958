"""mcpactor's own HTTP/1.1 server: a sans-io protocol and a thin trio driver.

``_protocol`` (bytes in, requests out; a response's parts in, bytes out; its limits and
framing rules in ``_rules``) does no I/O;
``_connection`` drives it on a socket and hands each request, which is also the way to
answer it (an ``Exchange``), to the app: its exchange handler, or its ASGI callable,
``_tls`` is the same connection over TLS, ``_websocket`` serves upgrades with wsproto,
``_listener`` accepts and holds the limits.
The server knows nothing of what the app serves: the bodies of the errors it writes
itself and a gate that new requests wait on are the caller's (``serve_h1``).
"""

from __future__ import annotations

from ._config import ErrorBody as ErrorBody
from ._config import H1Config as H1Config
from ._config import IntakeGate as IntakeGate
from ._config import plain_error_body as plain_error_body
from ._connection import Exchange as Exchange
from ._connection import Handler as Handler
from ._connection import asgi_handler as asgi_handler
from ._listener import TurnAwayLog as TurnAwayLog
from ._listener import serve_h1 as serve_h1
from ._listener import turn_away_response as turn_away_response
from ._protocol import CONTINUE as CONTINUE
from ._protocol import NEED_DATA as NEED_DATA
from ._protocol import Framing as Framing
from ._protocol import H1Protocol as H1Protocol
from ._protocol import Limits as Limits
from ._protocol import ProtocolError as ProtocolError
from ._protocol import Request as Request
from ._protocol import Response as Response
from ._protocol import Upgrade as Upgrade

__all__ = [
    "CONTINUE",
    "NEED_DATA",
    "ErrorBody",
    "Exchange",
    "Framing",
    "H1Config",
    "H1Protocol",
    "Handler",
    "IntakeGate",
    "Limits",
    "ProtocolError",
    "Request",
    "Response",
    "TurnAwayLog",
    "Upgrade",
    "asgi_handler",
    "plain_error_body",
    "serve_h1",
    "turn_away_response",
]
