"""Two crawls as tasks with the mcpactor client."""

from mcpactor.client import ClientSession


async def crawl_two(client: ClientSession) -> str:
    """Run two crawls as tasks: cancel one, wait for the other."""
    first = await client.tasks.call_tool("crawl", {"pages": 4}, ttl=600_000)
    second = await client.tasks.call_tool("crawl", {"pages": 100})
    await client.tasks.cancel(second["taskId"])
    state = await client.tasks.get(first["taskId"])  # poll
    assert state["status"] == "working"
    tasks = await client.tasks.list()  # every task of the session, every page
    assert len(tasks) == 2
    result = await client.tasks.result(first["taskId"])  # waits until it is done
    return result.text
