"""``mcpactor inspect`` shows a server's extensions; a plugin enables its own in code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcpactor.cli import main

PLUGIN = """
from mcpactor import CustomMethod, CustomNotification, Extension, Server


async def search(params, ctx):
    return {"hits": []}


server = Server("catalogue")


@server.tool
def add(a: int, b: int) -> int:
    return a + b


server.extensions.enable(
    Extension(
        "com.example/search",
        settings={"ranking": True},
        requires=["tools"],
        methods=[CustomMethod("com.example/search", search, {"type": "object"})],
        notifications=[CustomNotification("com.example/found")],
        description="Search the catalogue.",
    )
)
"""


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "catalogue.py"
    path.write_text(PLUGIN)
    return path


def test_inspect_json_lists_the_extensions_enabled_in_code(
    plugin: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", "catalogue.py", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (extension,) = report["extensions"]
    assert extension["identifier"] == "com.example/search"
    assert extension["server"] == "catalogue"
    assert extension["settings"] == {"ranking": True}
    assert extension["requires"] == ["tools"]
    assert [m["name"] for m in extension["methods"]] == ["com.example/search"]
    assert extension["notifications"][0] == {
        "name": "com.example/found",
        "description": "",
        "paramsSchema": {"type": "object"},
        "received": False,
    }
    declared = {"com.example/search": {"ranking": True}}
    assert report["revisions"]["2025-11-25"]["capabilities"]["extensions"] == declared
    assert "extensions" not in report["revisions"]["2025-06-18"]["capabilities"]


def test_inspect_table_shows_them(plugin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "catalogue.py"]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = lines.index("Extensions (1)")
    assert lines[start + 1] == '  com.example/search  settings: {"ranking":true}'
    assert "      requires: tools" in lines
    assert "      request com.example/search" in lines
    assert "      notification com.example/found (sent)" in lines


def test_an_unknown_extension_is_refused_by_inspect(
    plugin: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", "catalogue.py", "--extension", "com.example/none"]) == 2
    error = capsys.readouterr().err
    assert "--extension: extension 'com.example/none' is not installed" in error


# --- discovery: the entry points of the mcpactor.extensions group -----------------------


def distribution(root: Path, name: str, module: str, source: str, entry: str) -> None:
    """An installed distribution in ``root``: its metadata and its module."""
    info = root / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[mcpactor.extensions]\n{entry}\n")
    (root / f"{module}.py").write_text(source)


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    return root


def test_an_entry_point_gives_an_extension_or_a_factory(site: Path) -> None:
    from mcpactor.plugins import installed_extensions, load_extensions

    value = "from mcpactor import Extension\nextension = Extension('com.example/a')\n"
    distribution(site, "ext_a", "ext_a_mod", value, "a = ext_a_mod:extension")
    factory = "from mcpactor import Extension\ndef make():\n    return Extension('org.b/b')\n"
    distribution(site, "ext_b", "ext_b_mod", factory, "anything = ext_b_mod:make")
    found = installed_extensions()
    assert {"com.example/a", "org.b/b"} <= set(found)
    assert [e.identifier for e in load_extensions(["org.b/b", "com.example/a", "org.b/b"])] == [
        "org.b/b",
        "com.example/a",
    ]


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("raise RuntimeError('boom')\n", "failed to load: RuntimeError: boom"),
        ("extension = 42\n", "gives int (42), not a mcpactor.Extension"),
    ],
)
def test_a_broken_entry_point_is_named(site: Path, source: str, message: str) -> None:
    from mcpactor import PluginError
    from mcpactor.plugins import load_extensions

    distribution(site, "ext_broken", "ext_broken_mod", source, "broken = ext_broken_mod:extension")
    with pytest.raises(PluginError) as info:
        load_extensions(["com.example/any"])
    assert "broken = ext_broken_mod:extension (group mcpactor.extensions, ext_broken 1.0)" in str(
        info.value
    )
    assert message in str(info.value)


def test_two_distributions_of_one_identifier_are_refused(site: Path) -> None:
    from mcpactor import PluginError
    from mcpactor.plugins import installed_extensions

    value = "from mcpactor import Extension\nextension = Extension('com.example/twice')\n"
    distribution(site, "ext_one", "ext_one_mod", value, "one = ext_one_mod:extension")
    distribution(site, "ext_two", "ext_two_mod", value, "two = ext_two_mod:extension")
    with pytest.raises(PluginError, match=r"two installed extensions are com\.example/twice"):
        installed_extensions()
