"""A thread-offloaded tool that checks for cancellation between steps."""

import mcpactor
from mcpactor import Server

server = Server("primes", version="1.0.0")


# --8<-- [start:sample]
@server.tool()
def count_primes(below: int) -> int:
    """Count the primes below a number, by trial division (slow on purpose)."""
    count = 0
    for n in range(2, below):
        if n % 10_000 == 0:
            mcpactor.check_cancelled()
        if all(n % d for d in range(2, int(n**0.5) + 1)):
            count += 1
    return count


# --8<-- [end:sample]
