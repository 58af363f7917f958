"""The skills plugin (SEP-2640) served by ``mcpactor serve``, over stdio and HTTP, in both eras.

Each test starts the real command in a subprocess and speaks to it with mcpactor's
client. Every message the server sends is checked against the revision's official
schema as it arrives, and every ``skill://index.json`` against the index format of
SEP-2640, written as a JSON Schema in ``tests/data/skills-index.schema.json``.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, Final

import jsonschema
import pytest
import trio
from mcpactor_skills import EXTENSION_ID, INDEX_SCHEMA, INDEX_URI

from mcpactor import RequestError
from mcpactor.client import ClientSession, connect_http, connect_stdio
from tests.client.conftest import ServerMessages
from tests.serving import serve_http

ROOT: Final = Path(__file__).resolve().parents[2]
SAMPLE: Final = ROOT / "plugins" / "mcpactor-skills" / "tests" / "sample"
EXAMPLE: Final = ROOT / "examples" / "skills_server.py"
INDEX_FORMAT: Final = json.loads(
    (ROOT / "tests" / "data" / "skills-index.schema.json").read_text()
)
SESSION: Final = "2025-11-25"
STATELESS: Final = "2026-07-28"
#: seconds a server gets to start (a cold Python import) and answer
TIMEOUT: Final = 30
INVALID_PARAMS: Final = -32602

WAYS: Final = [
    pytest.param(transport, revision, id=f"{transport}-{revision}")
    for transport in ("stdio", "http")
    for revision in (SESSION, STATELESS)
]


class Wire(ServerMessages):
    """The server's messages, each checked; and the capabilities it declared."""

    def __call__(self, message: Any, request_method: str | None) -> None:
        super().__call__(message, request_method)
        if request_method in ("initialize", "server/discover") and "result" in message:
            self.capabilities = message["result"]["capabilities"]
        if request_method == "resources/read" and "result" in message:
            for contents in message["result"]["contents"]:
                if contents["uri"] == INDEX_URI:
                    jsonschema.Draft202012Validator(INDEX_FORMAT).validate(
                        json.loads(contents["text"])
                    )


def _environment(folder: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MCPACTOR_")}
    if folder is not None:
        env["MCPACTOR_SKILLS_FOLDER"] = str(folder)
    return env


def _http_server(target: list[str], env: dict[str, str]) -> AbstractAsyncContextManager[str]:
    """``mcpactor serve --http`` of ``target``; yields its MCP URL once it listens."""
    return serve_http(*target, cwd=ROOT, env=env, timeout=TIMEOUT)


@asynccontextmanager
async def served(
    transport: str,
    revision: str,
    *,
    folder: Path | None = SAMPLE,
    target: tuple[str, ...] = ("skills",),
) -> AsyncIterator[tuple[ClientSession, Wire]]:
    """A client of ``mcpactor serve TARGET`` at ``revision``, and what the server sent."""
    wire = Wire(revision)
    env = _environment(folder)
    hooks: dict[str, Any] = {"on_server_message": wire, "protocol_version": revision}
    with trio.fail_after(TIMEOUT):
        if transport == "stdio":
            command = [sys.executable, "-m", "mcpactor", "serve", *target]
            async with connect_stdio(command, env=env, cwd=ROOT, initialize=True, **hooks) as c:
                yield c, wire
        else:
            async with (
                _http_server(list(target), env) as url,
                connect_http(url, initialize=True, **hooks) as client,
            ):
                yield client, wire


async def read(client: ClientSession, uri: str) -> dict[str, Any]:
    result = await client.request("resources/read", {"uri": uri})
    (contents,) = result["contents"]
    assert contents["uri"] == uri
    return contents


async def read_error(client: ClientSession, uri: str) -> RequestError:
    with pytest.raises(RequestError) as refused:
        await client.request("resources/read", {"uri": uri})
    return refused.value


# --- serving the sample folder -------------------------------------------------------


@pytest.mark.parametrize(("transport", "revision"), WAYS)
async def test_the_sample_folder_is_served_as_the_sep_says(transport: str, revision: str) -> None:
    async with served(transport, revision) as (client, wire):
        assert wire.capabilities["extensions"][EXTENSION_ID] == {}
        index_result = await client.request("resources/read", {"uri": INDEX_URI})
        listed = await client.request("resources/list", {})
        skill_md = await read(client, "skill://acme/billing/refunds/SKILL.md")
        reference = await read(client, "skill://git-workflow/references/BRANCHING.md")
        script = await read(client, "skill://acme/billing/refunds/scripts/total.py")
        logo = await read(client, "skill://release-notes/assets/logo.png")
    (contents,) = index_result["contents"]
    assert contents["mimeType"] == "application/json"
    index = json.loads(contents["text"])
    assert index["$schema"] == INDEX_SCHEMA
    assert index["skills"] == [
        {
            "name": "refunds",
            "type": "skill-md",
            "description": "Process customer refund requests per company policy. Use when a "
            "customer asks for money back on an order.",
            "url": "skill://acme/billing/refunds/SKILL.md",
        },
        {
            "name": "git-workflow",
            "type": "skill-md",
            "description": "Follow this team's Git conventions for branches, commits and pull "
            "requests. Use when creating a branch, writing a commit message or opening a pull "
            "request.",
            "url": "skill://git-workflow/SKILL.md",
        },
        {
            "name": "release-notes",
            "type": "skill-md",
            # folded YAML (>-): one line
            "description": "Write the release notes of a new version from the merged pull "
            "requests. Use when a release is being prepared.",
            "url": "skill://release-notes/SKILL.md",
        },
    ]
    # The skill's name is the last segment of its path, and SKILL.md is explicit.
    for entry in index["skills"]:
        assert entry["url"].removesuffix("/SKILL.md").rsplit("/", 1)[-1] == entry["name"]
    resources = {resource["uri"]: resource for resource in listed["resources"]}
    assert resources["skill://git-workflow/SKILL.md"] | {"size": 0} == {
        "uri": "skill://git-workflow/SKILL.md",
        "name": "git-workflow",
        "description": index["skills"][1]["description"],
        "mimeType": "text/markdown",
        "size": 0,
    }
    assert resources[INDEX_URI]["mimeType"] == "application/json"
    assert {uri: r["mimeType"] for uri, r in resources.items() if uri != INDEX_URI} == {
        "skill://acme/billing/refunds/SKILL.md": "text/markdown",
        "skill://acme/billing/refunds/scripts/total.py": "text/x-python",
        "skill://acme/billing/refunds/templates/email.md": "text/markdown",
        "skill://git-workflow/SKILL.md": "text/markdown",
        "skill://git-workflow/references/BRANCHING.md": "text/markdown",
        "skill://release-notes/SKILL.md": "text/markdown",
        "skill://release-notes/assets/logo.png": "image/png",
    }
    skill_file = SAMPLE / "acme" / "billing" / "refunds" / "SKILL.md"
    assert skill_md == {
        "uri": "skill://acme/billing/refunds/SKILL.md",
        "mimeType": "text/markdown",
        "text": skill_file.read_text(),
    }
    assert reference["text"] == (SAMPLE / "git-workflow/references/BRANCHING.md").read_text()
    assert script["mimeType"] == "text/x-python"
    assert logo["mimeType"] == "image/png"
    assert (
        base64.b64decode(logo["blob"]) == (SAMPLE / "release-notes/assets/logo.png").read_bytes()
    )
    if revision == STATELESS:
        # Cache hints: the plugin's a minute, private, on reads and lists alike.
        for result in (index_result, listed):
            assert (result["ttlMs"], result["cacheScope"]) == (60_000, "private")
    else:
        assert "ttlMs" not in index_result


# --- what is refused -----------------------------------------------------------------


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A copy of the sample folder, and a secret beside it."""
    copy = tmp_path / "skills"
    shutil.copytree(SAMPLE, copy)
    (tmp_path / "secret.txt").write_text("the secret outside the skills")
    return copy


@pytest.mark.parametrize(("transport", "revision"), WAYS)
async def test_no_uri_leads_out_of_its_skill(transport: str, revision: str, folder: Path) -> None:
    async with served(transport, revision, folder=folder) as (client, _):
        # Swapped in after start-up: a symlink out, and a directory symlink on the way.
        (folder / "git-workflow" / "leak.md").symlink_to(folder.parent / "secret.txt")
        (folder / "git-workflow" / "up").symlink_to(folder.parent)
        escapes = {
            uri: await read_error(client, uri)
            for uri in (
                "skill://git-workflow/../release-notes/SKILL.md",
                "skill://git-workflow/%2E%2E/%2E%2E/secret.txt",
                "skill://git-workflow/references/../../../secret.txt",
                "skill://git-workflow//etc/passwd",
                "skill://git-workflow/.hidden",
                "skill://git-workflow/leak.md",
                "skill://git-workflow/up/secret.txt",
            )
        }
        missing = await read_error(client, "skill://git-workflow/references/NOPE.md")
        unknown = await read_error(client, "skill://no-such-skill/SKILL.md")
        big = "skill://git-workflow/" + "a/" * 5000 + "x"
        too_long = await read_error(client, big)
        # A file added after start-up is served by the skill's template.
        (folder / "git-workflow" / "references" / "LATE.md").write_text("late")
        late = await read(client, "skill://git-workflow/references/LATE.md")
    for uri, error in escapes.items():
        assert error.code == INVALID_PARAMS, uri
        assert "the secret" not in error.message
    assert "symlink" in escapes["skill://git-workflow/leak.md"].message
    assert "'..'" in escapes["skill://git-workflow/../release-notes/SKILL.md"].message
    not_found = -32002 if revision == SESSION else -32602
    assert missing.code == unknown.code == not_found
    assert too_long.code == INVALID_PARAMS
    assert len(too_long.message) < 400
    assert late == {
        "uri": "skill://git-workflow/references/LATE.md",
        "mimeType": "text/markdown",
        "text": "late",
    }


def _serve_and_fail(folder: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "mcpactor", "serve", "skills"],
        env=_environment(folder),
        cwd=ROOT,
        input="",
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode != 0
    return done.stderr


def test_a_bad_folder_stops_the_start_up_naming_the_file_and_the_rule(folder: Path) -> None:
    (folder / "git-workflow" / "SKILL.md").write_text(
        "---\nname: git-flow\ndescription: Branches.\n---\n"
    )
    (folder / "release-notes" / "assets" / "out").symlink_to(folder.parent / "secret.txt")
    stderr = _serve_and_fail(folder)
    assert (
        f"skills folder {str(folder)!r}: git-workflow/SKILL.md: 'name' 'git-flow' is not the "
        "name of its directory 'git-workflow'"
    ) in stderr
    # The error's first line is what the start-up report shows; the rest is counted.
    assert "'git-workflow' (and 1 more)" in stderr


def test_a_folder_that_is_not_one_stops_the_start_up(tmp_path: Path) -> None:
    stderr = _serve_and_fail(tmp_path / "nowhere")
    assert f"skills folder {str(tmp_path / 'nowhere')!r}: not a directory" in stderr


# --- a parameterized skill: the example server ----------------------------------------


@pytest.mark.parametrize(("transport", "revision"), WAYS)
async def test_a_template_skill_is_indexed_registered_and_read(
    transport: str, revision: str
) -> None:
    async with served(transport, revision, folder=None, target=(str(EXAMPLE),)) as (
        client,
        wire,
    ):
        assert wire.capabilities["extensions"][EXTENSION_ID] == {}
        index = json.loads((await read(client, INDEX_URI))["text"])
        templates = await client.request("resources/templates/list", {})
        metre = await read(client, "skill://units/metre/SKILL.md")
        completed = await client.request(
            "completion/complete",
            {
                "ref": {"type": "ref/resource", "uri": "skill://units/{unit}/SKILL.md"},
                "argument": {"name": "unit", "value": "me"},
            },
        )
        unknown = await read_error(client, "skill://units/parsec/SKILL.md")
        tools = await client.list_tools()
    template_entries = [e for e in index["skills"] if e["type"] == "mcp-resource-template"]
    assert template_entries == [
        {
            "type": "mcp-resource-template",
            "description": "How to convert to and from one unit",
            "url": "skill://units/{unit}/SKILL.md",
        }
    ]
    assert "skill://units/{unit}/SKILL.md" in {
        t["uriTemplate"] for t in templates["resourceTemplates"]
    }
    assert metre["mimeType"] == "text/markdown"
    assert metre["text"].startswith("---\nname: metre\ndescription: ")
    assert completed["completion"]["values"] == ["metre"]
    assert unknown.code in (-32002, -32602)
    assert [tool["name"] for tool in tools] == ["convert"]


# --- the extension enabled on another server, by its identifier ------------------------

NOTES: Final = """
from mcpactor import Server

server = Server("notes")


@server.tool
def shout(text: str) -> str:
    \"\"\"Say it louder.\"\"\"
    return text.upper()
"""


@pytest.mark.parametrize(("transport", "revision"), WAYS)
async def test_serve_extension_adds_the_folders_skills_to_any_server(
    transport: str, revision: str, tmp_path: Path
) -> None:
    (tmp_path / "notes.py").write_text(NOTES)
    target = ("--extension", EXTENSION_ID, str(tmp_path / "notes.py"))
    async with served(transport, revision, target=target) as (client, wire):
        assert wire.capabilities["extensions"] == {EXTENSION_ID: {}}
        skill_md = await read(client, "skill://git-workflow/SKILL.md")
        shouted = await client.call_tool("shout", {"text": "hi"})
    assert skill_md["text"] == (SAMPLE / "git-workflow" / "SKILL.md").read_text()
    assert shouted["content"][0]["text"] == "HI"


async def test_mcpactor_toml_enables_the_extension(tmp_path: Path) -> None:
    (tmp_path / "notes.py").write_text(NOTES)
    (tmp_path / "mcpactor.toml").write_text(
        f'extensions = ["{EXTENSION_ID}"]\n\n[servers.notes]\ntarget = "notes.py:server"\n'
    )
    config = ("--config", str(tmp_path / "mcpactor.toml"))
    async with served("stdio", STATELESS, target=config) as (client, wire):
        assert wire.capabilities["extensions"] == {EXTENSION_ID: {}}
        index = json.loads((await read(client, INDEX_URI))["text"])
    assert len(index["skills"]) == 3


def test_the_extension_without_a_folder_stops_the_start_up_naming_the_variable(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.py").write_text(NOTES)
    done = subprocess.run(
        [sys.executable, "-m", "mcpactor", "serve", "--extension", EXTENSION_ID, "notes.py"],
        env=_environment(None),
        cwd=tmp_path,
        input="",
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 1
    assert "'$MCPACTOR_SKILLS_FOLDER': not set: the extension io.modelcontextprotocol/skills" in (
        done.stderr
    )
