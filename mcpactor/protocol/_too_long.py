# What the line framer (_framing.py) reports in place of a line over its limit.
#
# A module of its own so that the class is built with the first over-long line (or the
# first import of the name), not with every stdio start.

from __future__ import annotations

import attrs

from .._exceptions import PARSE_ERROR, RemoteProtocolError

__all__ = ["FrameTooLong"]


@attrs.frozen
class FrameTooLong:
    """A line was longer than the limit and was dropped."""

    size: int
    limit: int

    def to_exception(self) -> RemoteProtocolError:
        """Return the -32700 error that answers this frame."""
        return RemoteProtocolError(
            f"message of at least {self.size} bytes exceeds the {self.limit}-byte limit",
            code=PARSE_ERROR,
            data={"limit": self.limit},
        )
