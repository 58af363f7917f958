"""A blocking handler that lets itself be cancelled between units of work."""

# --8<-- [start:imports]
import mcpactor

# --8<-- [end:imports]
from mcpactor import Server

server = Server("crunch", version="1.0.0")


def expensive(row: int) -> int:
    return row * row


# --8<-- [start:sample]
@server.tool()
def crunch(rows: int) -> int:
    total = 0
    for row in range(rows):
        mcpactor.check_cancelled()
        total += expensive(row)
    return total


# --8<-- [end:sample]
