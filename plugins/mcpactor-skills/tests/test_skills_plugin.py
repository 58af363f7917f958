"""The skills server: what a folder must be to be served, and what serving it registers."""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import jsonschema
import mcpactor_skills
import pytest
import trio
from mcpactor_skills import (
    EXTENSION_ID,
    INDEX_URI,
    Skills,
    SkillsError,
    SkillTemplate,
    load_skills,
    skills_extension,
)
from mcpactor_skills._files import FileRefused, checked_path, mime_type
from mcpactor_skills._folder import skill_file_uri
from mcpactor_skills._watch import watch

import mcpactor.testing
from mcpactor import CacheHint, ExtensionError, RequestError, SchemaError, Server
from mcpactor.client import ClientSession

SAMPLE: Final = Path(__file__).resolve().parent / "sample"
#: long enough for every legitimate wait; a hang fails instead of blocking
GUARD: Final = 10.0


def skill(folder: Path, path: str, frontmatter: str, body: str = "# Body\n") -> Path:
    directory = folder / path
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "SKILL.md").write_text(f"---\n{frontmatter}\n---\n\n{body}")
    return directory


def problems(folder: Path) -> list[str]:
    with pytest.raises(SkillsError) as refused:
        load_skills(folder)
    return refused.value.problems


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    root.mkdir()
    return root


# --- what a folder must be -------------------------------------------------------------


def test_the_sample_folder_has_three_skills_one_under_a_prefix() -> None:
    skills = load_skills(SAMPLE)
    assert [(s.path, s.name) for s in skills.skills] == [
        ("acme/billing/refunds", "refunds"),
        ("git-workflow", "git-workflow"),
        ("release-notes", "release-notes"),
    ]
    assert skills.skills[1].files == ("SKILL.md", "references/BRANCHING.md")
    assert skills.skills[1].frontmatter["metadata"] == {"owner": "platform-team", "version": "1.2"}
    assert skills.skills[0].uri == "skill://acme/billing/refunds/SKILL.md"


@pytest.mark.parametrize(
    ("frontmatter", "problem"),
    [
        ("description: d", "the frontmatter has no 'name'"),
        ("name: tool", "the frontmatter has no 'description'"),
        ("name: tool\ndescription: ''", "'description' must be a non-empty string"),
        ("name: tool\ndescription: " + "x" * 1025, "longer than 1024 characters"),
        ("name: other\ndescription: d", "'name' 'other' is not the name of its directory 'tool'"),
        ("name: 7\ndescription: d", "'name' must be a string, got int"),
        ("name: tool\ndescription: d\nmetadata: {version: 1.0}", "'metadata' must map strings"),
        ("name: tool\ndescription: d\nlicense: [MIT]", "'license' must be a string, got list"),
        ("name: tool\ndescription: d\ncompatibility: " + "x" * 501, "'compatibility' is longer"),
        ("name: [unclosed\ndescription: d", "the frontmatter is not valid YAML (line 3)"),
        ("- a list", "the frontmatter is not a mapping of fields"),
    ],
)
def test_frontmatter_breaking_the_agent_skills_rules_is_refused(
    folder: Path, frontmatter: str, problem: str
) -> None:
    skill(folder, "tool", frontmatter)
    (found,) = problems(folder)
    assert found.startswith("tool/SKILL.md: ")
    assert problem in found


@pytest.mark.parametrize("name", ["Tool", "-tool", "tool-", "to--ol", "to_ol", "t" * 65, "tööl"])
def test_a_name_breaking_the_naming_rule_is_refused(folder: Path, name: str) -> None:
    skill(folder, name, f"name: {name}\ndescription: d")
    (found,) = problems(folder)
    assert "must be 1-64 lowercase letters, digits and single hyphens" in found


def test_a_skill_md_without_frontmatter_is_refused(folder: Path) -> None:
    (folder / "tool").mkdir()
    (folder / "tool" / "SKILL.md").write_text("# Tool\n")
    assert problems(folder) == ["tool/SKILL.md: does not start with YAML frontmatter ('---' line)"]
    (folder / "tool" / "SKILL.md").write_text("---\nname: tool\n")
    assert problems(folder) == ["tool/SKILL.md: the frontmatter has no closing '---' line"]


def test_every_problem_is_listed_the_first_on_the_first_line(folder: Path) -> None:
    skill(folder, "a", "name: b\ndescription: d")
    skill(folder, "c", "name: c")
    with pytest.raises(SkillsError) as refused:
        load_skills(folder)
    first, *rest = str(refused.value).splitlines()
    assert first == (
        f"skills folder {str(folder)!r}: a/SKILL.md: 'name' 'b' is not the name of its "
        "directory 'a' (and 1 more)"
    )
    assert rest == ["  - c/SKILL.md: the frontmatter has no 'description'"]


def test_nested_skills_a_top_level_skill_md_and_an_empty_folder_are_refused(
    folder: Path,
) -> None:
    assert problems(folder) == ["no skill in it: no directory below it holds a SKILL.md"]
    outer = skill(folder, "outer", "name: outer\ndescription: d")
    skill(outer, "inner", "name: inner\ndescription: d")
    assert problems(folder) == [
        "outer/inner: a skill inside the skill 'outer' (skills do not nest)"
    ]
    (folder / "SKILL.md").write_text("---\nname: x\ndescription: d\n---\n")
    assert problems(folder) == [
        "SKILL.md is at the top of the folder: each skill is a directory below it"
    ]


def test_a_prefix_that_is_no_uri_segment_is_refused(folder: Path) -> None:
    skill(folder, "my team/tool", "name: tool\ndescription: d")
    (folder / "not a prefix").mkdir()  # holding no skill, it is no prefix
    assert problems(folder) == [
        "my team/tool: the prefix directory 'my team' may hold only letters, digits and "
        "'-', '.', '_', '~'"
    ]


def test_symlinks_out_of_a_skill_are_refused_and_inside_it_served(
    folder: Path, tmp_path: Path
) -> None:
    tool = skill(folder, "tool", "name: tool\ndescription: d")
    (tmp_path / "secret.txt").write_text("secret")
    (tool / "notes.md").write_text("notes")
    (tool / "alias.md").symlink_to("notes.md")
    (tool / "linked-dir").symlink_to(tool)  # a symlinked directory is not entered
    assert load_skills(folder).skills[0].links == {"alias.md": "notes.md"}
    (tool / "out.md").symlink_to(tmp_path / "secret.txt")
    other = skill(folder, "other", "name: other\ndescription: d")
    (tool / "sideways.md").symlink_to(other / "SKILL.md")
    (tool / ".env").write_text("TOKEN=1")
    (tool / "env.md").symlink_to(".env")
    assert problems(folder) == [
        "tool/env.md: a symlink to a hidden file",
        "tool/out.md: a symlink leading outside its skill",
        "tool/sideways.md: a symlink leading outside its skill",
    ]


def test_names_that_are_not_utf8_are_refused_and_others_quoted(folder: Path) -> None:
    tool = skill(folder, "tool", "name: tool\ndescription: d")
    (tool / "my notes #1.md").write_text("notes")
    assert load_skills(folder).skills[0].files == ("SKILL.md", "my notes #1.md")
    assert skill_file_uri("tool", "my notes #1.md") == "skill://tool/my%20notes%20%231.md"
    os.mkdir(os.path.join(os.fsencode(tool), b"bin\xe9"))
    with open(os.path.join(os.fsencode(tool), b"data\xff.bin"), "wb") as file:
        file.write(b"\x00")
    assert problems(folder) == [
        "tool/bin\\xe9: a name that is not UTF-8",
        "tool/data\\xff.bin: a name that is not UTF-8",
    ]


def test_hidden_files_and_byte_code_are_not_served(folder: Path) -> None:
    tool = skill(folder, "tool", "name: tool\ndescription: d")
    (tool / ".env").write_text("TOKEN=1")
    (folder / ".git").mkdir()
    # What running the skill's script leaves beside it.
    (tool / "scripts" / "__pycache__").mkdir(parents=True)
    (tool / "scripts" / "run.py").write_text("print(1)")
    (tool / "scripts" / "__pycache__" / "run.cpython-311.pyc").write_bytes(b"\x00")
    assert load_skills(folder).skills[0].files == ("SKILL.md", "scripts/run.py")
    with pytest.raises(FileRefused, match="__pycache__"):
        checked_path("scripts/__pycache__/run.cpython-311.pyc")


def test_limits_bound_the_folder(folder: Path) -> None:
    tool = skill(folder, "tool", "name: tool\ndescription: d")
    for n in range(3):
        (tool / f"{n}.txt").write_text("x")
    with pytest.raises(SkillsError, match="more than 3 files"):
        load_skills(folder, max_files=3)
    with pytest.raises(SkillsError, match=r"tool/SKILL.md: longer than 10 bytes"):
        load_skills(folder, max_file_bytes=10)
    skill(folder, "a/b/c/deep", "name: deep\ndescription: d")
    with pytest.raises(SkillsError, match="a/b/c: deeper than 2 levels"):
        load_skills(folder, max_depth=2)
    with pytest.raises(ValueError, match="max_files must be a positive int"):
        load_skills(folder, max_files=0)


def test_a_folder_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(SkillsError, match=r"'.*file': not a directory"):
        load_skills(tmp_path / "file")


def test_a_skill_template_must_name_skill_md_uris() -> None:
    with pytest.raises(ValueError, match=r"must be skill://…/SKILL.md"):
        SkillTemplate("skill://docs/{product}", "d", str)
    with pytest.raises(ValueError, match=r"needs a \{variable\}"):
        SkillTemplate("skill://docs/x/SKILL.md", "d", str)


# --- paths a client names ----------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["", "../x", "a/../../x", "a//b", "/etc/passwd", ".env", "a/./b", "a\\..\\b", "a\x00b"],
)
def test_a_path_out_of_the_skill_is_refused_before_anything_opens_it(path: str) -> None:
    with pytest.raises(FileRefused):
        checked_path(path)


def test_mime_types_come_from_the_name_then_the_bytes() -> None:
    assert mime_type("SKILL.md") == "text/markdown"
    assert mime_type("scripts/run.py") == "text/x-python"
    assert mime_type("a.tar.gz") == "application/gzip"
    assert mime_type("logo.PNG") == "image/png"
    assert mime_type("Makefile", b"all:\n\techo") == "text/plain"
    assert mime_type("blob", b"\x00\xff") == "application/octet-stream"


# --- serving ----------------------------------------------------------------------------


@pytest.fixture
def served() -> Iterator[Server]:
    server = Server("with-skills")
    skills = load_skills(SAMPLE, cache=CacheHint(ttl_ms=5_000, scope="public"))
    skills.add_to(server)
    yield server
    skills.remove_from(server)


async def test_an_index_and_every_file_are_registered(served: Server) -> None:
    async with mcpactor.testing.client(served) as client:
        resources = await client.request("resources/list", {})
        index = await client.request("resources/read", {"uri": INDEX_URI})
    uris = [resource["uri"] for resource in resources["resources"]]
    assert uris[0] == INDEX_URI
    assert len(uris) == 8
    assert json.loads(index["contents"][0]["text"]) == load_skills(SAMPLE).index()


async def test_a_file_over_the_limit_is_refused_when_read(folder: Path) -> None:
    tool = skill(folder, "tool", "name: tool\ndescription: d")
    (tool / "big.txt").write_text("x" * 200)
    server = Server("limits")
    load_skills(folder, max_file_bytes=100).add_to(server)
    async with mcpactor.testing.client(server) as client:
        with pytest.raises(RequestError, match="200 bytes, more than the 100 a read returns"):
            await client.request("resources/read", {"uri": "skill://tool/big.txt"})
        (tool / "big.txt").unlink()
        os.mkfifo(tool / "big.txt")  # a FIFO in its place: refused, not waited on
        with pytest.raises(RequestError, match="not a regular file"):
            await client.request("resources/read", {"uri": "skill://tool/big.txt"})


def test_a_uri_registered_already_leaves_nothing_half_registered() -> None:
    server = Server("clash")
    server.add_resource(lambda: "mine", "skill://release-notes/SKILL.md")
    with pytest.raises(SchemaError, match="already registered"):
        load_skills(SAMPLE).add_to(server)
    assert list(server._registry.resources) == ["skill://release-notes/SKILL.md"]
    assert not server._registry.templates


def test_the_plugin_serves_what_the_environment_names(
    monkeypatch: pytest.MonkeyPatch, folder: Path
) -> None:
    skill(folder, "tool", "name: tool\ndescription: d")
    monkeypatch.setenv("MCPACTOR_SKILLS_FOLDER", str(folder))
    try:
        served = mcpactor_skills.configure()
        assert served is not None
        assert [s.name for s in served.skills] == ["tool"]
        assert "skill://tool/SKILL.md" in mcpactor_skills.server._registry.resources
        monkeypatch.setenv("MCPACTOR_SKILLS_MAX_FILE_BYTES", "lots")
        with pytest.raises(ValueError, match="MCPACTOR_SKILLS_MAX_FILE_BYTES must be a whole"):
            mcpactor_skills.configure()
    finally:
        monkeypatch.delenv("MCPACTOR_SKILLS_FOLDER")
        monkeypatch.delenv("MCPACTOR_SKILLS_MAX_FILE_BYTES")
        assert mcpactor_skills.configure() is None
    assert not mcpactor_skills.server._registry.resources


# --- the extension ------------------------------------------------------------------------


async def test_the_extension_declares_itself_and_serves_the_folder() -> None:
    server = Server("ext", extensions=[skills_extension(SAMPLE)])
    assert EXTENSION_ID in server.extensions
    async with mcpactor.testing.client(server) as client:
        capabilities = client.server.capabilities
        index = await client.request("resources/read", {"uri": INDEX_URI})
    assert capabilities["extensions"] == {EXTENSION_ID: {}}
    assert json.loads(index["contents"][0]["text"])["skills"][1]["name"] == "git-workflow"


def test_a_second_skills_extension_is_refused_leaving_nothing_behind(folder: Path) -> None:
    skill(folder, "tool", "name: tool\ndescription: d")
    server = Server("twice", extensions=[skills_extension(SAMPLE)])
    before = set(server._registry.resources)
    with pytest.raises(ExtensionError, match="already enabled"):
        server.extensions.enable(skills_extension(folder))
    assert set(server._registry.resources) == before
    # Two folders on one server: a URI both would serve is refused, whole.
    clash = Server("clash", extensions=[skills_extension(SAMPLE)])
    with pytest.raises(SchemaError, match="already registered"):
        load_skills(SAMPLE).add_to(clash)


# --- archives -------------------------------------------------------------------------------

INDEX_FORMAT: Final = json.loads(
    (
        Path(__file__).resolve().parents[3] / "tests" / "data" / "skills-index.schema.json"
    ).read_text()
)


async def test_with_archives_each_skill_is_one_tar_gz_the_index_lists(folder: Path) -> None:
    shutil.copytree(SAMPLE, folder, dirs_exist_ok=True)
    script = folder / "acme" / "billing" / "refunds" / "scripts" / "total.py"
    script.chmod(0o755)
    server = Server("archives", extensions=[skills_extension(folder, archives=True)])
    async with mcpactor.testing.client(server) as client:
        index = json.loads(
            (await client.request("resources/read", {"uri": INDEX_URI}))["contents"][0]["text"]
        )
        packed = await client.request(
            "resources/read", {"uri": "skill://acme/billing/refunds.tar.gz"}
        )
        single = await client.request(
            "resources/read", {"uri": "skill://acme/billing/refunds/templates/email.md"}
        )
    jsonschema.Draft202012Validator(INDEX_FORMAT).validate(index)
    assert index["skills"][0] == {
        "name": "refunds",
        "type": "archive",
        "description": load_skills(SAMPLE).skills[0].description,
        "url": "skill://acme/billing/refunds.tar.gz",
    }
    (contents,) = packed["contents"]
    assert contents["mimeType"] == "application/gzip"
    data = base64.b64decode(contents["blob"])
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        members = archive.getmembers()
        # SKILL.md at the root, no wrapper directory, only regular files, no ".."
        assert [m.name for m in members] == [
            "SKILL.md",
            "scripts/total.py",
            "templates/email.md",
        ]
        assert all(m.isfile() for m in members)
        modes = {m.name: m.mode for m in members}
        extracted = archive.extractfile("templates/email.md")
        assert extracted is not None
        email = extracted.read()
    assert modes == {"SKILL.md": 0o644, "scripts/total.py": 0o755, "templates/email.md": 0o644}
    assert email == (folder / "acme/billing/refunds/templates/email.md").read_bytes()
    # The same files are still resources of their own.
    assert single["contents"][0]["text"] == email.decode()


async def test_an_archive_is_bounded_like_the_reads_it_is_made_of(folder: Path) -> None:
    tool = skill(folder, "tool", "name: tool\ndescription: d")
    for n in range(5):
        (tool / f"{n}.txt").write_text("x" * 90)
    server = Server("bounded")
    load_skills(folder, max_file_bytes=100, archives=True).add_to(server)
    async with mcpactor.testing.client(server) as client:
        with pytest.raises(RequestError, match="more than the 400 bytes an archive holds"):
            await client.request("resources/read", {"uri": "skill://tool.tar.gz"})


def test_two_skills_of_one_name_are_told_apart_by_their_prefixes(folder: Path) -> None:
    skill(folder, "acme/billing/refunds", "name: refunds\ndescription: Billing refunds.")
    skill(folder, "acme/support/refunds", "name: refunds\ndescription: Support refunds.")
    index = load_skills(folder).index()
    assert [(e["name"], e["url"]) for e in index["skills"]] == [
        ("refunds", "skill://acme/billing/refunds/SKILL.md"),
        ("refunds", "skill://acme/support/refunds/SKILL.md"),
    ]
    jsonschema.Draft202012Validator(INDEX_FORMAT).validate(index)


async def test_a_directory_uri_is_refused_saying_what_to_read(served: Server) -> None:
    async with mcpactor.testing.client(served) as client:
        for uri in ("skill://git-workflow/references", "skill://git-workflow/"):
            with pytest.raises(RequestError) as refused:
                await client.request("resources/read", {"uri": uri})
            assert refused.value.code == -32602
        assert "a directory: read its files by their own URIs" in str(
            await _error(client, "skill://git-workflow/references")
        )


async def _error(client: ClientSession, uri: str) -> RequestError:
    with pytest.raises(RequestError) as refused:
        await client.request("resources/read", {"uri": uri})
    return refused.value


async def test_a_skills_file_template_completes_its_files(served: Server) -> None:
    async with mcpactor.testing.client(served) as client:
        completed = await client.request(
            "completion/complete",
            {
                "ref": {"type": "ref/resource", "uri": "skill://acme/billing/refunds/{+path}"},
                "argument": {"name": "path", "value": "s"},
            },
        )
    assert completed["completion"]["values"] == ["scripts/total.py"]


# --- watching the folder ------------------------------------------------------------------


async def test_a_watched_folder_that_breaks_is_kept_then_served_once_mended(
    folder: Path,
) -> None:
    skill(folder, "tool", "name: tool\ndescription: d")
    tried = trio.Event()
    served: list[Skills] = []
    changed = trio.Event()

    def reload() -> Skills:
        try:
            return load_skills(folder)
        finally:
            trio.from_thread.run_sync(tried.set)

    def serve(skills: Skills) -> None:
        served.append(skills)
        changed.set()

    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            await nursery.start(watch, load_skills(folder), 0.01, reload, serve)
            (folder / "tool" / "SKILL.md").write_text("no frontmatter")
            await tried.wait()
            assert served == []  # broken: what was served stays
            skill(folder, "tool", "name: tool\ndescription: mended")
            await changed.wait()
            nursery.cancel_scope.cancel()
    assert [s.description for s in served[-1].skills] == ["mended"]


async def test_the_watching_plugin_serves_a_new_skill_and_tells_clients(folder: Path) -> None:
    skill(folder, "tool", "name: tool\ndescription: d")
    try:
        mcpactor_skills.configure(folder, watch=0.01)
        with trio.fail_after(GUARD):
            async with mcpactor.testing.client(mcpactor_skills.server) as client:
                skill(folder, "late", "name: late\ndescription: Came later.")
                await client.notifications.wait_for("notifications/resources/list_changed")
                while True:  # told at the first change; the swap may have more to do
                    listed = await client.request("resources/list", {})
                    uris = {resource["uri"] for resource in listed["resources"]}
                    if "skill://late/SKILL.md" in uris:
                        break
                    await client.notifications.wait_for("notifications/resources/list_changed")
                index = await client.request("resources/read", {"uri": INDEX_URI})
    finally:
        mcpactor_skills.configure()
    names = [entry["name"] for entry in json.loads(index["contents"][0]["text"])["skills"]]
    assert names == ["late", "tool"]


def test_watch_seconds_must_be_positive(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="watch must be positive seconds"):
        mcpactor_skills.configure(SAMPLE, watch=0)
    monkeypatch.setenv("MCPACTOR_SKILLS_WATCH", "soon")
    with pytest.raises(ValueError, match="MCPACTOR_SKILLS_WATCH must be positive seconds"):
        mcpactor_skills.configure(SAMPLE)
    monkeypatch.delenv("MCPACTOR_SKILLS_WATCH")
    mcpactor_skills.configure()
