"""bench/before_after.py: the named targets beside copies that import an earlier tree."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from .bench_scripts import load_bench_script, load_harness

before_after = load_bench_script("before_after.py", "bench_before_after")
targets = load_harness("targets")


def test_each_target_gets_a_copy_that_imports_the_earlier_tree() -> None:
    text = before_after.paired_targets(["mcpactor-stdio", "mcpactor-http-json-auth"], "abc")
    parsed = {t.name: t for t in targets.parse_targets(text)}
    assert list(parsed) == [
        "mcpactor-stdio",
        "mcpactor-stdio@abc",
        "mcpactor-http-json-auth",
        "mcpactor-http-json-auth@abc",
    ]
    for name in ("mcpactor-stdio", "mcpactor-http-json-auth"):
        now, then = parsed[name], parsed[f"{name}@abc"]
        assert then.peer == f"{now.peer}@abc"
        assert then.cmd == "env PYTHONPATH={before_tree} " + now.cmd
        assert (then.kind, then.mode, then.bearer, then.python) == (
            now.kind,
            now.mode,
            now.bearer,
            now.python,
        )


def test_an_unknown_target_is_named() -> None:
    with pytest.raises(SystemExit, match="no-such-target"):
        before_after.paired_targets(["mcpactor-stdio", "no-such-target"], "abc")


def test_the_earlier_tree_is_that_commits_package(tmp_path: Path) -> None:
    head = subprocess.run(
        ["git", "-C", str(before_after.ROOT), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    short, folder = before_after.export("HEAD", tmp_path)
    assert head.startswith(short)
    exported = (folder / "mcpactor" / "_version.py").read_bytes()
    committed = subprocess.run(
        ["git", "-C", str(before_after.ROOT), "show", "HEAD:mcpactor/_version.py"],
        capture_output=True,
        check=True,
    ).stdout
    assert exported == committed
