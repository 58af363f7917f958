"""A tool run in a worker process, killed there when the call is cancelled."""

import hashlib

from mcpactor import Server

server = Server("work", version="1.0.0")


# --8<-- [start:sample]
@server.tool(offload="process", task_support="optional", timeout=120)
def proof_of_work(prefix: str, zeros: int = 5) -> int:
    """Find the nonce whose SHA-256 with the prefix starts with that many hex zeros."""
    target = "0" * zeros
    nonce = 0
    while not hashlib.sha256(f"{prefix}{nonce}".encode()).hexdigest().startswith(target):
        nonce += 1
    return nonce


# --8<-- [end:sample]
