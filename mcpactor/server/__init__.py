"""What users write servers with: ``Server``, ``Context`` and result helpers."""

from ._compose import Mount as Mount
from ._compose import MountStatistics as MountStatistics
from ._context import Context as Context
from ._context import Peer as Peer
from ._results import Audio as Audio
from ._results import Image as Image
from ._server import Server as Server
from ._server import ServerListener as ServerListener

__all__ = [
    "Audio",
    "Context",
    "Image",
    "Mount",
    "MountStatistics",
    "Peer",
    "Server",
    "ServerListener",
]
