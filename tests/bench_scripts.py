"""Loading the scripts of bench/, which are files, not a package, for their tests."""

from __future__ import annotations

import importlib.util
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
