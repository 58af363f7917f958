"""A task tool that asks its questions first, then runs long as a task."""

from typing import Any

from mcpactor import Context, Server

server = Server("db", version="1.0.0")
APPROVER_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}


# --8<-- [start:sample]
@server.tool(task_support="required", task_after_input=True)
async def migrate(ctx: Context) -> str:
    who = await ctx.elicit("Who approves the migration?", APPROVER_FORM)
    # --8<-- [end:sample]
    return f"migrated, approved by {who.content['name'] if who.content else 'nobody'}"
