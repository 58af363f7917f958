"""What several commands of the ``mcpactor`` command line share.

The global options (given before a command or after it), the servers a command serves
(targets, ``--config``, prefixes), and the types that check one value each and say what
they expected.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any, Final

from ..protocol import describe

__all__ = [
    "LOG_LEVELS",
    "add_composition_arguments",
    "add_global_arguments",
    "address_list",
    "endpoint_path",
    "json_object",
    "log_level",
    "positive_count",
    "positive_seconds",
    "seconds",
]

LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def log_level(text: str) -> str:
    level = text.upper()
    if level not in LOG_LEVELS:
        expected = ", ".join(name.lower() for name in LOG_LEVELS)
        raise argparse.ArgumentTypeError(f"expected one of {expected}, got {text!r}")
    return level


def add_global_arguments(parser: argparse.ArgumentParser, *, command: bool) -> None:
    # Given before the command or after it: on a command, an option left out must not
    # overwrite the value given before it (SUPPRESS leaves it unset).
    parser.add_argument(
        "--log-level",
        type=log_level,
        default=argparse.SUPPRESS if command else None,
        metavar="LEVEL",
        help="how much is logged to stderr: debug, info, warning (the default), error or "
        "critical, in any case",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS if command else False,
        help="on an error, print its traceback too",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=argparse.SUPPRESS if command else 0,
        help="log more: -v info, -vv debug (--log-level wins)",
    )
    parser.add_argument(
        "-q",
        "--quiet",
        action="count",
        default=argparse.SUPPRESS if command else 0,
        help="log less: -q errors only, -qq critical only (--log-level wins)",
    )


def add_composition_arguments(serve: argparse.ArgumentParser) -> None:
    serve.add_argument(
        "targets",
        nargs="*",
        metavar="TARGET",
        help="an installed plugin's name, package.module[:attr], path/to/server.py[:attr] "
        "or an http(s):// or ws:// URL; several are served as one, each under a prefix "
        "(default: every installed plugin, or the servers of --config)",
    )
    serve.add_argument(
        "--config",
        metavar="FILE",
        help="serve what FILE names (mcpactor.toml, or pyproject.toml with [tool.mcpactor]; "
        "a directory: the one in it); TARGETs then pick servers of it by name",
    )
    serve.add_argument(
        "--no-prefix",
        action="store_true",
        help="serve tool and prompt names unprefixed (a name served twice is an error)",
    )
    serve.add_argument(
        "--prefix",
        action="append",
        default=[],
        metavar="NAME=PREFIX",
        help="the prefix of the server NAME (default: NAME); repeatable",
    )
    serve.add_argument(
        "--openapi-base-url",
        metavar="URL",
        help="the API's base URL for openapi:DOCUMENT targets (default: the document's "
        "first absolute 'servers' URL)",
    )
    serve.add_argument(
        "--openapi-header",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a header sent with every call of openapi:DOCUMENT targets (an API key); repeatable",
    )
    serve.add_argument(
        "--max-concurrent",
        action="append",
        default=[],
        metavar="NAME=N",
        help="serve at most N requests of the server NAME at once; repeatable",
    )
    serve.add_argument(
        "--strict",
        action="store_true",
        help="a plugin that fails to load stops the server instead of being left out "
        "(a TARGET named on the command line always does)",
    )
    serve.add_argument(
        "--extension",
        dest="extensions",
        action="append",
        default=[],
        metavar="ID",
        help="enable the installed extension ID (e.g. com.example/search) on the served "
        "server; repeatable (adds to the extensions of --config)",
    )
    serve.add_argument(
        "--tool-search",
        action="store_true",
        help="search mode: clients list search_tools and call_tool (and the --pin tools) "
        "instead of every tool (docs/catalogs.md)",
    )
    serve.add_argument(
        "--pin",
        dest="pinned",
        action="append",
        default=[],
        metavar="TOOL",
        help="with --tool-search, list TOOL as well; repeatable",
    )


def address_list(text: str) -> tuple[str, ...]:
    # Addresses or networks, comma-separated, each checked here so a typo is named.
    from ..transports import parse_networks

    items = tuple(item.strip() for item in text.split(",") if item.strip())
    try:
        parse_networks(items, option="--forwarded-allow-ips")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).partition(": ")[2]) from None
    if not items:
        raise argparse.ArgumentTypeError(f"expected addresses or networks, got {text!r}")
    return items


def positive_count(text: str) -> int:
    # A positive integer; ``1_000`` reads as in Python and TOML.
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}")
    return value


def positive_seconds(text: str) -> float:
    value = seconds(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def endpoint_path(text: str) -> str:
    if not text.startswith("/"):
        raise argparse.ArgumentTypeError(f"expected a path starting with '/', got {text!r}")
    return text


def json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc}): {describe(text)}") from None
    except RecursionError:
        raise argparse.ArgumentTypeError(f"nested too deeply: {describe(text)}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {describe(text)}")
    return value
