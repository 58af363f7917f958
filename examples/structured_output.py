"""Tools that return structured data: the schema comes from the return annotation.

A tool annotated with an attrs class, a dataclass or a TypedDict gets that class's JSON
Schema as its ``outputSchema`` and sends its value as ``structuredContent`` (plus the
same JSON as text, for clients of older revisions). Other types are wrapped as
``{"result": ...}``. ``structured_output=False`` opts out.

    mcpactor serve examples/structured_output.py
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal, TypedDict

import attrs
import trio

from mcpactor import Server
from mcpactor.transports import serve_stdio

server = Server("structured-output", version="1.0.0")


@attrs.frozen
class Point:
    """A point in the plane."""

    x: float
    y: float


@attrs.frozen
class Segment:
    """A line segment and its length."""

    start: Point
    end: Point
    length: float


@server.tool()
async def segment(x1: float, y1: float, x2: float, y2: float) -> Segment:
    """The segment between two points (an attrs class, nested)."""
    length = ((x2 - x1) ** 2 + (y2 - y1) ** 2) ** 0.5
    return Segment(start=Point(x=x1, y=y1), end=Point(x=x2, y=y2), length=length)


@dataclasses.dataclass
class WordCount:
    """How many words a text has, and the longest one."""

    words: int
    longest: str | None = None


@server.tool()
async def count_words(text: str) -> WordCount:
    """Count the words of a text (a dataclass)."""
    words = text.split()
    return WordCount(words=len(words), longest=max(words, key=len) if words else None)


class Temperature(TypedDict):
    """A temperature reading."""

    value: float
    unit: Annotated[Literal["C", "F"], "Celsius or Fahrenheit"]


@server.tool()
async def to_fahrenheit(celsius: float) -> Temperature:
    """Convert a Celsius temperature (a TypedDict)."""
    return Temperature(value=celsius * 9 / 5 + 32, unit="F")


@server.tool()
async def primes_below(n: int) -> list[int]:
    """The primes below n (a list: sent as {"result": [...]})."""
    sieve = [True] * max(n, 2)
    sieve[0] = sieve[1] = False
    for i in range(2, int(n**0.5) + 1):
        if sieve[i]:
            sieve[i * i :: i] = [False] * len(sieve[i * i :: i])
    return [i for i, prime in enumerate(sieve) if prime and i < n]


@server.tool(structured_output=False)
async def haiku() -> str:
    """A haiku, as plain text only."""
    return "Nursery opens\ntasks bloom and end together\nnothing leaks away"


if __name__ == "__main__":
    trio.run(serve_stdio, server)
