"""One test run at every session revision, through a fixture named by assignment."""

from myserver import server

# --8<-- [start:sample]
from mcpactor.client import ClientSession
from mcpactor.testing import SESSION_REVISIONS, client_fixture

client = client_fixture(server, protocol_version=SESSION_REVISIONS)


async def test_tools_are_listed(client: ClientSession) -> None:
    tools = await client.list_tools()
    assert [tool["name"] for tool in tools] == ["add", "greet"]


# --8<-- [end:sample]
