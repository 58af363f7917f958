"""Loading the scripts of bench/, which are files, not a package, for their tests."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parent.parent / "bench"


def load_bench_script(file_name: str, module_name: str) -> ModuleType:
    """Import ``bench/<file_name>`` as a module named ``module_name``."""
    spec = importlib.util.spec_from_file_location(module_name, BENCH / file_name)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_harness(module: str) -> ModuleType:
    """Import ``bench/harness/<module>.py`` (the package is registered as ``bench_harness``)."""
    if "bench_harness" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "bench_harness",
            BENCH / "harness" / "__init__.py",
            submodule_search_locations=[str(BENCH / "harness")],
        )
        assert spec is not None
        assert spec.loader is not None
        package = importlib.util.module_from_spec(spec)
        sys.modules["bench_harness"] = package
        spec.loader.exec_module(package)
    return importlib.import_module(f"bench_harness.{module}")


PEER_MODULES = ("contract", "splice", "canned")  # what the peers import from their own folder


def load_peer(module: str) -> ModuleType:
    """Import ``bench/peers/<module>.py``.

    A peer imports its neighbours by their bare names, as its folder heads sys.path when
    it runs; they are registered under those names here, before the peer is loaded.
    """
    for neighbour in PEER_MODULES:
        if neighbour not in sys.modules:
            sys.modules[neighbour] = load_bench_script(f"peers/{neighbour}.py", neighbour)
        if neighbour == module:
            return sys.modules[neighbour]
    return load_bench_script(f"peers/{module}.py", f"bench_peer_{module}")
