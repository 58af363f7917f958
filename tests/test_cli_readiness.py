"""The readiness endpoint's flags and ``[http]`` key reach HttpOptions."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from mcpactor.cli import main
from mcpactor.transports import Readiness

from .test_cli_http_options import GOOD, Recorded, write
from .test_cli_http_options import recorded as recorded  # the fixture


def test_the_ready_path_moves_or_goes(tmp_path: Path, recorded: Recorded) -> None:
    served = str(write(tmp_path / "good.py", GOOD))
    assert main(["serve", served, "--http", "0", "--ready-path", "/ready"]) == 0
    assert recorded.options.ready_path == "/ready"
    recorded.calls.clear()
    assert main(["serve", served, "--http", "0", "--no-ready"]) == 0
    assert recorded.options.ready_path is None
    recorded.calls.clear()
    assert main(["serve", served, "--http", "0"]) == 0
    # Without a store nothing is checked: ready once it serves. One readiness answers
    # the endpoint and is what SIGTERM and the admin page's drain action drain.
    readiness = recorded.options.readiness
    assert recorded.options.ready_path == "/readyz"
    assert isinstance(readiness, Readiness)
    assert trio.run(readiness.state) is None
    readiness.drain()
    assert trio.run(readiness.state) == "draining"


def test_the_drain_delay_comes_from_the_flag_or_the_file(
    tmp_path: Path, recorded: Recorded
) -> None:
    served = str(write(tmp_path / "good.py", GOOD))
    assert main(["serve", served, "--http", "0"]) == 0
    assert recorded.options.drain_delay == 5.0
    recorded.calls.clear()
    assert main(["serve", served, "--http", "0", "--drain-delay", "0"]) == 0
    assert recorded.options.drain_delay == 0.0
    recorded.calls.clear()
    config = write(
        tmp_path / "mcpactor.toml",
        """
        transport = "http"

        [http]
        port = 0
        drain_delay = 12

        [servers.good]
        target = "good.py"
        """,
    )
    assert main(["serve", "--config", str(config)]) == 0
    assert recorded.options.drain_delay == 12.0
    recorded.calls.clear()
    assert main(["serve", "--config", str(config), "--drain-delay", "1.5"]) == 0
    assert recorded.options.drain_delay == 1.5


@pytest.mark.parametrize(("value", "expected"), [("'/up'", "/up"), ("false", None)])
def test_the_config_file_sets_the_ready_path(
    tmp_path: Path, recorded: Recorded, value: str, expected: str | None
) -> None:
    write(tmp_path / "good.py", GOOD)
    config = write(
        tmp_path / "mcpactor.toml",
        f"""
        transport = "http"

        [http]
        port = 0
        ready_path = {value}

        [servers.good]
        target = "good.py"
        """,
    )
    assert main(["serve", "--config", str(config)]) == 0
    assert recorded.options.ready_path == expected
