"""A prompt and a completion of its argument."""

from typing import Annotated, Literal

from mcpactor import Server

server = Server("notes", version="1.0.0")
TOPICS = ["trio", "tasks", "testing"]


# --8<-- [start:prompt]
@server.prompt()
def summarise(
    topic: Annotated[str, "What to summarise"], style: Literal["short", "long"] = "short"
) -> str:
    """Summarise a topic."""
    return f"Summarise {topic} in a {style} form."


# --8<-- [end:prompt]


# --8<-- [start:completion]
@server.completion("summarise", "topic")
def complete_topic(value: str, context: dict[str, str]) -> list[str]:
    return [t for t in TOPICS if t.startswith(value)]


# --8<-- [end:completion]


@server.tool()
def topics() -> list[str]:
    """The topics there are summaries of."""
    return TOPICS
