"""mcpactor's own HTTP/1.1 server: a sans-io protocol and a thin trio driver.

``_protocol`` (bytes in, requests out) and ``_response`` (a response's parts in, bytes
out) do no I/O; ``_connection`` drives them on a socket and calls the ASGI app,
``_websocket`` serves upgrades with wsproto, ``_listener`` accepts and holds the limits.
The server knows nothing of what the app serves: the bodies of the errors it writes
itself and a gate that new requests wait on are the caller's (``serve_h1``).
"""

from __future__ import annotations

from ._config import ErrorBody as ErrorBody
from ._config import H1Config as H1Config
from ._config import IntakeGate as IntakeGate
from ._config import plain_error_body as plain_error_body
from ._listener import TurnAwayLog as TurnAwayLog
from ._listener import serve_h1 as serve_h1
from ._listener import turn_away_response as turn_away_response
from ._protocol import CONTINUE as CONTINUE
from ._protocol import NEED_DATA as NEED_DATA
from ._protocol import H1Protocol as H1Protocol
from ._protocol import Limits as Limits
from ._protocol import ProtocolError as ProtocolError
from ._protocol import Request as Request
from ._protocol import Upgrade as Upgrade
from ._response import Response as Response

__all__ = [
    "CONTINUE",
    "NEED_DATA",
    "ErrorBody",
    "H1Config",
    "H1Protocol",
    "IntakeGate",
    "Limits",
    "ProtocolError",
    "Request",
    "Response",
    "TurnAwayLog",
    "Upgrade",
    "plain_error_body",
    "serve_h1",
    "turn_away_response",
]
