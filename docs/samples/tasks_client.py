"""Two crawls as tasks with the mcpactor client."""

from mcpactor.client import ClientSession


async def crawl_two(client: ClientSession) -> str:
    """Run two crawls as tasks: cancel one, wait for the other."""
    first = await client.call_tool_as_task("crawl", {"pages": 4}, ttl=600_000)
    second = await client.call_tool_as_task("crawl", {"pages": 100})
    await client.cancel_task(second["taskId"])
    state = await client.get_task(first["taskId"])  # poll
    assert state["status"] == "working"
    tasks = await client.list_tasks()  # every task of the session, every page
    assert len(tasks) == 2
    result = await client.get_task_result(first["taskId"])  # waits until it is done
    return result.text
