"""Every feature of the Server API in one server.

Serve it with ``mcpactor serve examples/everything.py`` (or ``python
examples/everything.py``) and point any MCP client at it. Each section below shows one
part of the API: tools, structured output, progress and logging, cancellation,
requests to the client (sampling, elicitation, roots), resources and subscriptions,
prompts, completions, and tools added while the server runs.
"""

from __future__ import annotations

import base64
import contextlib
import enum
import statistics
import time
from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Literal, TypedDict

import attrs
import trio

from mcpactor import (
    Context,
    EmbeddedResource,
    Image,
    ImageContent,
    RequestError,
    Server,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
    ToolError,
    check_cancelled,
)
from mcpactor.transports import serve_stdio

server = Server(
    "everything",
    version="1.0.0",
    title="Everything",
    description="A tour of every mcpactor feature",
    instructions="A demonstration server: every tool is safe to call.",
)

#: a 1×1 orange PNG, small enough to inline
PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGN4EasFAAOgAXDt/zlJAAAAAElFTkSuQmCC"
)

NOTES = {
    1: "Buy oat milk.",
    2: "Trio nurseries own their tasks.",
    3: "Call the plumber about the sink.",
}


# --- lifespan: set up when serving starts, torn down when it ends --------------------

started_at: float | None = None


@server.lifespan
@contextlib.asynccontextmanager
async def remember_start(server: Server) -> AsyncIterator[None]:
    """Note when the server started, for the about page."""
    global started_at
    started_at = trio.current_time()
    yield
    started_at = None


# --- plain tools -------------------------------------------------------------------


@server.tool(annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True))
async def echo(text: Annotated[str, "the text to send back"]) -> str:
    """Send the text back unchanged."""
    return text


# A plain ``def`` works too: it runs in a worker thread, never blocking other requests.
@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def divide(dividend: float, divisor: float) -> float:
    """Divide two numbers; dividing by zero is a tool error the model can read."""
    if divisor == 0:
        raise ToolError("cannot divide by zero: pick a non-zero divisor")
    return dividend / divisor


class Style(enum.Enum):
    """How ``shout`` writes its text."""

    UPPER = "upper"
    LOWER = "lower"
    TITLE = "title"


@server.tool()
async def shout(text: str, style: Style = Style.UPPER, times: Literal[1, 2, 3] = 1) -> str:
    """Restyle text and repeat it.

    Args:
        text: what to restyle
        style: which case to write it in
        times: how many times to repeat it
    """
    styled = {Style.UPPER: text.upper, Style.LOWER: text.lower, Style.TITLE: text.title}[style]()
    return " ".join([styled] * times)


# --- structured output: attrs classes and TypedDicts -----------------------------


class Sky(enum.Enum):
    """What the sky looks like."""

    CLEAR = "clear"
    CLOUDY = "cloudy"
    RAIN = "rain"


@attrs.frozen
class Forecast:
    """Tomorrow's weather in one city."""

    city: str
    temperature: float
    units: Literal["celsius", "fahrenheit"]
    sky: Sky


@server.tool()
async def forecast(city: str, units: Literal["celsius", "fahrenheit"] = "celsius") -> Forecast:
    """Tomorrow's weather (made up, but always the same for a city)."""
    celsius = 10 + len(city) % 15
    temperature = celsius if units == "celsius" else celsius * 9 / 5 + 32
    sky = list(Sky)[len(city) % len(Sky)]
    return Forecast(city=city, temperature=temperature, units=units, sky=sky)


class Summary(TypedDict):
    """Summary statistics of some numbers."""

    count: int
    mean: float
    spread: Annotated[float, "the largest value minus the smallest"]


@server.tool()
async def summarize_numbers(numbers: list[float]) -> Summary:
    """Count, average and spread of a list of numbers."""
    if not numbers:
        raise ToolError("give at least one number")
    return Summary(
        count=len(numbers),
        mean=statistics.fmean(numbers),
        spread=max(numbers) - min(numbers),
    )


# --- other content: images and embedded resources ----------------------------------


@server.tool()
async def pixel() -> ImageContent:
    """A one-pixel PNG image."""
    return Image(PIXEL_PNG)


@server.tool()
async def attach_note(note_id: int) -> list[TextContent | EmbeddedResource]:
    """Return a note as an embedded resource, with a line of text about it."""
    if note_id not in NOTES:
        raise ToolError(f"there is no note {note_id}; try 1 to {len(NOTES)}")
    uri = f"everything://notes/{note_id}"
    return [
        TextContent(text=f"Note {note_id} is attached."),
        EmbeddedResource(
            resource=TextResourceContents(uri=uri, text=NOTES[note_id], mime_type="text/plain")
        ),
    ]


# --- progress and logging ------------------------------------------------------------


@server.tool()
async def count_to(n: Annotated[int, "how far to count"], ctx: Context) -> str:
    """Count to n, reporting progress and logging each step."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"counted to {i}")
        await ctx.debug(f"step {i} of {n}")
    await ctx.info(f"counted to {n}")
    return f"counted to {n}"


# --- long-running work and cancellation ------------------------------------------------
#
# A cancelled request (the client sent notifications/cancelled, or the server is shutting
# down) cancels its handler like any trio code: at its next checkpoint. ``track`` records
# how each labelled job ended, so a client can ask with ``job_outcome``.


Outcome = Literal["finished", "cancelled", "failed"]


@attrs.define
class Job:
    """How one labelled job ended, once it has."""

    outcome: Outcome | None = None
    ended: trio.Event = attrs.Factory(trio.Event)


jobs: dict[str, Job] = {}


def _job(label: str) -> Job:
    return jobs.setdefault(label, Job())


@contextlib.contextmanager
def track(label: str, *, in_thread: bool = False) -> Iterator[None]:
    """Record whether the work in the block finished, failed or was cancelled."""
    job = _job(label)
    try:
        yield
    except trio.Cancelled:
        job.outcome = "cancelled"
        raise
    except Exception:
        job.outcome = "failed"
        raise
    else:
        job.outcome = "finished"
    finally:
        # trio objects belong to the trio thread: a worker thread hands the call over.
        if in_thread:
            trio.from_thread.run_sync(job.ended.set)
        else:
            job.ended.set()


@server.tool()
async def sleep(seconds: float, ctx: Context, label: str = "sleep") -> str:
    """Sleep, logging when it starts; cancel the request to stop it early."""
    with track(label):
        await ctx.info(f"{label}: sleeping for {seconds} s")
        await trio.sleep(seconds)
    return f"{label}: slept for {seconds} s"


@server.tool()
def crunch(steps: int, ctx: Context, label: str = "crunch") -> int:
    """Blocking work in a worker thread that stops between steps when cancelled."""
    total = 0
    with track(label, in_thread=True):
        # Async Context methods are reached from the worker thread through trio.
        trio.from_thread.run(ctx.info, f"{label}: crunching {steps} steps")
        for step in range(1, steps + 1):
            check_cancelled()
            time.sleep(0.005)  # stands in for real blocking work
            total += step * step
    return total


@server.tool()
async def job_outcome(label: str) -> Outcome:
    """Wait for the job with this label to end and say how it ended."""
    job = _job(label)
    await job.ended.wait()
    assert job.outcome is not None
    return job.outcome


# --- asking the client: sampling, elicitation, roots -----------------------------------


@server.tool()
async def ask_model(question: str, ctx: Context) -> str:
    """Ask the client's language model a question (sampling)."""
    reply = await ctx.sample(
        question, max_tokens=200, system_prompt="Answer in one short sentence."
    )
    answer = reply.content.text if isinstance(reply.content, TextContent) else reply.content.type
    return f"{reply.model} answered: {answer}"


@server.tool()
async def book_table(restaurant: str, ctx: Context) -> str:
    """Book a table, asking the user how many guests (elicitation)."""
    answer = await ctx.elicit(
        f"How many guests for {restaurant}?",
        {
            "type": "object",
            "properties": {
                "guests": {"type": "integer", "minimum": 1, "description": "number of guests"},
                "terrace": {"type": "boolean", "description": "sit outside"},
            },
            "required": ["guests"],
        },
    )
    if answer.action != "accept" or answer.content is None:
        return f"No table at {restaurant}: the user chose to {answer.action}."
    where = " on the terrace" if answer.content.get("terrace") else ""
    return f"Booked {restaurant} for {answer.content['guests']}{where}."


@server.tool()
async def workspace_roots(ctx: Context) -> list[str]:
    """The URIs of the client's roots (the folders it lets this server see)."""
    return [root.uri for root in await ctx.list_roots()]


@server.on_roots_changed
async def roots_changed(ctx: Context) -> None:
    """Log the new roots when the client says they changed."""
    roots = await ctx.list_roots()
    await ctx.info(f"roots changed: {', '.join(root.uri for root in roots) or 'none'}")


# --- resources: static, binary, templated, subscribable --------------------------------


@server.resource("everything://about", mime_type="text/markdown", title="About")
async def about() -> str:
    """What this server is and how long it has been up."""
    uptime = trio.current_time() - started_at if started_at is not None else 0.0
    return f"# Everything\n\nA tour of mcpactor, up for {uptime:.0f} s.\n"


@server.resource("everything://pixel.png", mime_type="image/png")
async def pixel_png() -> bytes:
    """The one-pixel PNG, as a binary resource."""
    return PIXEL_PNG


@server.resource("everything://notes/{note_id}", mime_type="text/plain")
async def note(note_id: int) -> str:
    """One note, by its number."""
    if note_id not in NOTES:
        raise RequestError(-32002, f"no note {note_id}", {"uri": f"everything://notes/{note_id}"})
    return NOTES[note_id]


counter = 0


@server.resource("everything://counter", mime_type="application/json")
async def counter_value() -> dict[str, int]:
    """The counter; subscribe to hear when ``increment`` changes it."""
    return {"value": counter}


@server.tool()
async def increment(by: int = 1) -> int:
    """Add to the counter and tell subscribers that it changed."""
    global counter
    counter += by
    server.notify_resource_updated("everything://counter")
    return counter


# --- prompts: arguments, images, embedded resources ------------------------------------


@server.prompt(title="Code review")
async def code_review(code: str, language: Literal["python", "rust", "go"] = "python") -> str:
    """Ask the model to review some code.

    Args:
        code: the code to review
        language: the language it is written in
    """
    return f"Please review this {language} code:\n\n{code}"


@server.prompt()
async def describe_image() -> list[str | ImageContent]:
    """Ask the model to describe an image."""
    return ["What colour is this pixel?", Image(PIXEL_PNG)]


@server.prompt()
async def discuss_note(note_id: int) -> list[EmbeddedResource | str]:
    """Discuss one note, embedded in the prompt."""
    if note_id not in NOTES:
        raise RequestError(-32602, f"no note {note_id}")
    contents = TextResourceContents(
        uri=f"everything://notes/{note_id}", text=NOTES[note_id], mime_type="text/plain"
    )
    return [EmbeddedResource(resource=contents), "What should I do about this note?"]


@server.prompt()
async def translate(text: str, target: str) -> str:
    """Translate text into another language.

    Args:
        text: what to translate
        target: the language to translate into
    """
    return f"Translate into {target}:\n\n{text}"


# --- completions -------------------------------------------------------------------------
# Literal and Enum prompt arguments (``code_review``'s language) complete on their own.

LANGUAGES = ("Danish", "Dutch", "English", "French", "German", "Spanish")


@server.completion("translate", "target")
async def complete_language(value: str, arguments: dict[str, str]) -> list[str]:
    """Languages that start with what the user typed so far."""
    return [language for language in LANGUAGES if language.lower().startswith(value.lower())]


@server.completion("everything://notes/{note_id}", "note_id")
async def complete_note_id(value: str, arguments: dict[str, str]) -> list[str]:
    """Note numbers that start with what the user typed so far."""
    return [str(note_id) for note_id in NOTES if str(note_id).startswith(value)]


# --- changing the server while it runs ---------------------------------------------------


@server.tool()
async def teach_greeting(language: str, greeting: str) -> str:
    """Teach the server a greeting: adds a tool greet_<language> that uses it."""
    if not language.isalpha():
        raise ToolError(f"language must be letters only, got {language!r}")
    name = f"greet_{language.lower()}"

    async def greet(person: str) -> str:
        return f"{greeting}, {person}!"

    try:
        server.add_tool(greet, name=name, description=f"Greet someone in {language}.")
    except ValueError as exc:
        raise ToolError(str(exc)) from exc
    return f"added tool {name!r}"


if __name__ == "__main__":
    trio.run(serve_stdio, server)
