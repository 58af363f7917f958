"""bench/call_path.py profiles exactly one warm tools/call on ``mcpactor serve``."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import mcpactor
from mcpactor.runtime import SessionActor

from .bench_scripts import load_bench_script

#: the profile is switched on and off by these signals
needs_signals = pytest.mark.skipif(
    not hasattr(signal, "SIGUSR1"), reason="SIGUSR1 and SIGUSR2 switch the profile"
)
LAYERS = ("mcpactor.protocol", "mcpactor.server", "mcpactor.runtime", "mcpactor.transports")


@pytest.fixture(scope="module")
def call_path() -> ModuleType:
    return load_bench_script("call_path.py", "bench_call_path")


def test_a_profile_counts_functions_modules_and_changes_of_module(call_path: ModuleType) -> None:
    profile = call_path.Profile(
        (("a", "f"), ("a", "g"), ("b", "h"), ("a", "f"), ("a", "f"), ("c", "k"))
    )
    assert len(profile.functions) == 4
    assert profile.modules == {"a", "b", "c"}
    assert profile.module_changes == 3
    assert profile.summary() == "4 functions in 3 modules, 3 changes of module"
    assert list(profile.listing())[:3] == ["  a (2)", "      f", "      g"]


def test_the_recorder_notes_the_package_s_functions_only(
    call_path: ModuleType, tmp_path: Path
) -> None:
    from mcpactor.protocol import encode

    out = str(tmp_path / "profile.json")
    package = os.path.dirname(os.path.abspath(mcpactor.__file__)) + os.sep
    recorder = call_path.Recorder(package, out)
    recorder.switch_on(0, None)
    try:
        encode({"jsonrpc": "2.0", "id": 1, "result": {}})
    finally:
        recorder.switch_off(0, None)
    assert os.path.exists(out + ".on")
    entered = {tuple(pair) for pair in json.loads(Path(out).read_text())}
    assert (encode.__module__, encode.__qualname__) in entered
    assert all(module.startswith("mcpactor.") for module, _ in entered)
    # Switched off: what runs now is not noted.
    encode({"jsonrpc": "2.0", "id": 2, "result": {}})
    assert {tuple(pair) for pair in json.loads(Path(out).read_text())} == entered


def check_one_call(profile: Any) -> None:
    functions = profile.functions
    for layer in LAYERS:
        assert any(module.startswith(layer + ".") for module, _ in functions), layer
    # The call reached the tool's handler in the server.
    assert any(
        module.startswith("mcpactor.server.") and "tool" in name.lower()
        for module, name in functions
    )
    # Exactly the one call: nothing of the start-up.
    assert not any(module.startswith("mcpactor.cli") for module, _ in functions)


@needs_signals
def test_one_warm_http_call_in_a_session(call_path: ModuleType) -> None:
    profile = call_path.profile_call("http", warm=3)
    check_one_call(profile)
    # In a session the session actor serves the request.
    actor = (SessionActor.__module__, SessionActor.__qualname__ + ".")
    assert any(
        module == actor[0] and name.startswith(actor[1]) for module, name in profile.functions
    )


@needs_signals
def test_one_warm_stdio_call_at_2026_07_28(call_path: ModuleType) -> None:
    profile = call_path.profile_call("stdio-2026", warm=3)
    check_one_call(profile)
    assert profile.module_changes >= len(profile.modules) - 1
