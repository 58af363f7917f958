"""The rounds in your own hands: read the answers, or return InputRequired."""

# --8<-- [start:imports]
from typing import Any

from mcpactor import Context, InputRequired, Server
from mcpactor.protocol._mrtr import elicitation_request

# --8<-- [end:imports]

server = Server("deployer", version="1.0.0")
FORM: dict[str, Any] = {"type": "object", "properties": {"yes": {"type": "boolean"}}}


# --8<-- [start:sample]
@server.tool
async def deploy(env: str, ctx: Context) -> Any:
    answer = ctx.input_responses.get("confirm")
    if answer is None:
        return InputRequired(
            {"confirm": elicitation_request(f"Deploy to {env}?", FORM)}, state={"step": 1}
        )
    # --8<-- [end:sample]
    return f"deployed to {env}"
