# Serving a folder of skills as resources (SEP-2640).
#
# Every file of every skill is a resource ``skill://<skill-path>/<file>``, listed with
# its MIME type and size; SKILL.md's name and description come from its frontmatter.
# Each skill also has the template ``skill://<skill-path>/{+path}``, as the SEP
# suggests, so a file added after start-up can be read by its URI too. The index
# ``skill://index.json`` lists every skill (``skill-md``) and every parameterized skill
# (``mcp-resource-template``) in the Agent Skills discovery format.
#
# Reads run in worker threads (blocking file I/O), are bounded by ``max_file_bytes``
# and never leave the skill (``_files.py``). A missing file is the revision's
# resource-not-found error; a refused path is -32602 with the reason.

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

from mcpactor import (
    BlobResourceContents,
    CacheHint,
    Context,
    Extension,
    RequestError,
    Server,
    TextResourceContents,
)

from ._archive import ARCHIVE_SUFFIX, pack
from ._files import FileRefused, MissingFile, checked_path, is_text, mime_type, read_bounded, sniff
from ._folder import SCHEME, SKILL_FILE, Skill, SkillsError, read_folder, skill_file_uri

__all__ = [
    "EXTENSION_ID",
    "INDEX_SCHEMA",
    "INDEX_URI",
    "SkillTemplate",
    "Skills",
    "load_skills",
    "skills_extension",
]

#: the extension's identifier under ``capabilities.extensions``
EXTENSION_ID: Final = "io.modelcontextprotocol/skills"
#: the well-known URI of the index
INDEX_URI: Final = "skill://index.json"
#: the ``$schema`` of the index: the Agent Skills discovery format it follows
INDEX_SCHEMA: Final = "https://schemas.agentskills.io/discovery/0.2.0/schema.json"
DEFAULT_MAX_FILE_BYTES: Final = 1 << 20
DEFAULT_MAX_FILES: Final = 10_000
DEFAULT_MAX_DEPTH: Final = 16
#: skills are files that change with a deployment: a minute is fresh enough
DEFAULT_CACHE: Final = CacheHint(ttl_ms=60_000)
_INVALID_PARAMS: Final = -32602
#: an archive holds at most this many times the largest file a read returns
_ARCHIVE_FILES: Final = 4
#: characters of a URI an error repeats
_MAX_SHOWN: Final = 200


@dataclass(frozen=True)
class SkillTemplate:
    """A parameterized skill: a URI template of ``SKILL.md`` URIs and what reads one.

    ``uri`` is an RFC 6570 template such as ``skill://docs/{product}/SKILL.md``;
    ``read`` is registered as that resource template (its parameters are the template's
    variables, plus a Context if it declares one) and returns the SKILL.md text, whose
    ``name`` should be the skill path's last segment.
    """

    uri: str
    description: str
    read: Callable[..., Any]

    def __post_init__(self) -> None:
        if not self.uri.startswith(SCHEME) or not self.uri.endswith("/" + SKILL_FILE):
            raise ValueError(
                f"a skill template's URI must be skill://…/{SKILL_FILE}, got {self.uri!r}"
            )
        if "{" not in self.uri:
            raise ValueError(f"a skill template's URI needs a {{variable}}, got {self.uri!r}")
        if not self.description.strip():
            raise ValueError(f"the skill template {self.uri!r} needs a description")


class Skills:
    """A folder of skills, checked, and what serving it registers on a server."""

    def __init__(
        self,
        folder: str,
        skills: Sequence[Skill],
        *,
        templates: Sequence[SkillTemplate] = (),
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        cache: CacheHint | None = DEFAULT_CACHE,
        archives: bool = False,
    ) -> None:
        #: the folder, as a real path
        self.folder = folder
        #: its skills, sorted by path
        self.skills = tuple(skills)
        #: the parameterized skills served beside them
        self.templates = tuple(templates)
        self.max_file_bytes = max_file_bytes
        #: whether each skill is also one ``.tar.gz`` resource, which the index lists
        self.archives = archives
        self.cache = cache
        # server -> the URIs registered on it, to take them away again
        self._registered: dict[int, list[str]] = {}

    def __repr__(self) -> str:
        return f"<Skills {self.folder!r}: {len(self.skills)} skills>"

    def index(self) -> dict[str, Any]:
        """The ``skill://index.json`` document."""
        entries: list[dict[str, str]] = [
            {
                "name": skill.name,
                "type": "archive" if self.archives else "skill-md",
                "description": skill.description,
                "url": _archive_uri(skill) if self.archives else skill.uri,
            }
            for skill in self.skills
        ]
        entries.extend(
            {"type": "mcp-resource-template", "description": t.description, "url": t.uri}
            for t in self.templates
        )
        return {"$schema": INDEX_SCHEMA, "skills": entries}

    def extension(self) -> Extension:
        """The Skills extension serving these skills, for ``Server(extensions=[...])``.

        It declares ``io.modelcontextprotocol/skills`` under ``capabilities.extensions``
        (no settings: the SEP defines none), needs the ``resources`` capability, and its
        setup is ``add_to``.
        """
        return Extension(
            EXTENSION_ID,
            requires=("resources",),
            setup=self.add_to,
            description=f"Agent Skills of {self.folder} served as skill:// resources",
        )

    def add_to(self, server: Server[Any]) -> None:
        """Register the skills' resources, templates and index on ``server``.

        Raises:
            SchemaError: one of the URIs is registered there already (nothing of these
                skills stays registered).
            ValueError: these skills are served by ``server`` already.
        """
        if id(server) in self._registered:
            raise ValueError(f"{self!r} is served by {server!r} already")
        added: list[str] = []
        try:
            self._add(server, added)
        except BaseException:
            for uri in added:  # nothing half-registered
                server.remove_resource(uri)
            raise
        self._registered[id(server)] = added

    def remove_from(self, server: Server[Any]) -> None:
        """Unregister what ``add_to`` registered on ``server``."""
        for uri in self._registered.pop(id(server), ()):
            server.remove_resource(uri)

    def _add(self, server: Server[Any], added: list[str]) -> None:
        def add(fn: Callable[..., Any], uri: str, **options: Any) -> None:
            server.add_resource(fn, uri, cache=self.cache, **options)
            added.append(uri)

        index = json.dumps(self.index(), ensure_ascii=False, indent=2)
        add(
            lambda: index,
            INDEX_URI,
            name="index.json",
            title="Skills index",
            description="The skills this server serves, in the Agent Skills discovery format",
            mime_type="application/json",
            size=len(index.encode()),
        )
        for skill in self.skills:
            for file in skill.files:
                add(self._file_reader(skill, file), skill_file_uri(skill.path, file),
                    **self._file_options(skill, file))  # fmt: skip
            if self.archives:
                add(self._archive_reader(skill), _archive_uri(skill),
                    name=f"{skill.name}{ARCHIVE_SUFFIX}", mime_type="application/gzip",
                    description=f"The skill {skill.name!r} as one archive")  # fmt: skip
            files_uri = f"{SCHEME}{skill.path}/{{+path}}"
            add(
                self._template_reader(skill),
                files_uri,
                name=f"{skill.name}-files",
                description=f"Any file of the skill {skill.name!r}, by its path in the skill",
            )
            # A host completing ``path`` gets the skill's files: a completer replaces any
            # before it for the same template, so registering again is harmless.
            server.completion(files_uri, "path")(_file_completer(skill))
        for template in self.templates:
            add(template.read, template.uri, description=template.description,
                mime_type="text/markdown")  # fmt: skip

    def _file_options(self, skill: Skill, file: str) -> dict[str, Any]:
        real = skill.links.get(file, file)
        try:
            size: int | None = os.stat(os.path.join(skill.directory, real)).st_size
        except OSError:
            size = None
        if file == SKILL_FILE:
            return {
                "name": skill.name,
                "description": skill.description,
                "mime_type": "text/markdown",
                "size": size,
            }
        mime = mime_type(file)
        if mime == "application/octet-stream":  # a name that says nothing: the bytes may
            mime = mime_type(file, sniff(skill.directory, real))
        return {
            "name": f"{skill.name}/{file}",
            "description": f"{file} of the skill {skill.name!r}",
            "mime_type": mime,
            "size": size,
        }

    def _file_reader(
        self, skill: Skill, file: str
    ) -> Callable[[Context], TextResourceContents | BlobResourceContents]:
        uri = skill_file_uri(skill.path, file)
        real = skill.links.get(file, file)

        def read_skill_file(ctx: Context) -> TextResourceContents | BlobResourceContents:
            return self._read(ctx, skill, real, uri, file)

        return read_skill_file

    def _template_reader(
        self, skill: Skill
    ) -> Callable[[str, Context], TextResourceContents | BlobResourceContents]:
        def read_any_skill_file(
            path: str, ctx: Context
        ) -> TextResourceContents | BlobResourceContents:
            uri = skill_file_uri(skill.path, path)
            with _read_errors(uri, ctx):
                checked = checked_path(path)
            # A symlink known at start-up leads where it led then; any other is refused.
            return self._read(ctx, skill, skill.links.get(checked, checked), uri, checked)

        return read_any_skill_file

    def _archive_reader(self, skill: Skill) -> Callable[[Context], BlobResourceContents]:
        uri = _archive_uri(skill)

        def read_skill_archive(ctx: Context) -> BlobResourceContents:
            limit = self.max_file_bytes
            with _read_errors(uri, ctx):
                data = pack(skill, max_file_bytes=limit, max_total_bytes=_ARCHIVE_FILES * limit)
            return BlobResourceContents.from_bytes(uri, data, "application/gzip")

        return read_skill_archive

    def _read(
        self, ctx: Context, skill: Skill, real: str, uri: str, name: str
    ) -> TextResourceContents | BlobResourceContents:
        with _read_errors(uri, ctx):
            data = read_bounded(skill.directory, real, self.max_file_bytes)
        mime = "text/markdown" if name == SKILL_FILE else mime_type(name, data[:4096])
        if is_text(mime):
            try:
                return TextResourceContents(uri=uri, text=data.decode("utf-8"), mime_type=mime)
            except UnicodeDecodeError:
                pass
        return BlobResourceContents.from_bytes(uri, data, mime)


def _file_completer(skill: Skill) -> Callable[[str, Mapping[str, str]], list[str]]:
    def complete_skill_file(value: str, context: Mapping[str, str]) -> list[str]:
        return [file for file in skill.files if file.startswith(value)]

    return complete_skill_file


def _archive_uri(skill: Skill) -> str:
    return f"{SCHEME}{skill.path}{ARCHIVE_SUFFIX}"


@contextmanager
def _read_errors(uri: str, ctx: Context) -> Iterator[None]:
    """A read's failures as the JSON-RPC errors ``resources/read`` answers with."""
    if len(uri) > _MAX_SHOWN:  # a client's URI, bounded before it is repeated
        uri = uri[:_MAX_SHOWN] + "…"
    try:
        yield
    except MissingFile:
        code = ctx.negotiated.revision.resource_not_found_code
        raise RequestError(code, f"resource not found: {uri}", {"uri": uri}) from None
    except FileRefused as exc:
        raise RequestError(_INVALID_PARAMS, f"{uri}: {exc}", {"uri": uri}) from None
    except OSError as exc:
        raise RequestError(_INVALID_PARAMS, f"{uri}: cannot be read ({exc.strerror})") from None


def load_skills(
    folder: str | os.PathLike[str],
    *,
    templates: Sequence[SkillTemplate] = (),
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_files: int = DEFAULT_MAX_FILES,
    max_depth: int = DEFAULT_MAX_DEPTH,
    cache: CacheHint | None = DEFAULT_CACHE,
    archives: bool = False,
) -> Skills:
    """Read and check a folder of skills: each directory holding a SKILL.md is one.

    ``max_file_bytes`` bounds each read (and each SKILL.md), ``max_files`` the files of
    the folder, ``max_depth`` its directories' depth; ``cache`` is the hint reads and
    lists carry at the revisions that have hints (None: the server's). With
    ``archives`` each skill is also served as ``skill://<skill-path>.tar.gz``, and the
    index lists those (its files stay readable one by one).

    Raises:
        SkillsError: the folder cannot be served; the message lists every problem, each
            with its file.
        ValueError: a limit is not positive.
    """
    for option, value in (
        ("max_file_bytes", max_file_bytes),
        ("max_files", max_files),
        ("max_depth", max_depth),
    ):
        if type(value) is not int or value < 1:
            raise ValueError(f"{option} must be a positive int, got {value!r}")
    root, skills = read_folder(
        folder, max_files=max_files, max_depth=max_depth, max_file_bytes=max_file_bytes
    )
    uris = {skill.uri for skill in skills}
    for template in templates:
        if template.uri in uris:
            raise SkillsError(os.fspath(folder), [f"the template {template.uri!r} is a skill"])
    return Skills(
        root,
        skills,
        templates=templates,
        max_file_bytes=max_file_bytes,
        cache=cache,
        archives=archives,
    )


def skills_extension(
    folder: str | os.PathLike[str],
    *,
    templates: Sequence[SkillTemplate] = (),
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_files: int = DEFAULT_MAX_FILES,
    max_depth: int = DEFAULT_MAX_DEPTH,
    cache: CacheHint | None = DEFAULT_CACHE,
    archives: bool = False,
) -> Extension:
    """The Skills extension serving the skills of ``folder`` (see ``load_skills``).

    ``Server(..., extensions=[skills_extension("skills")])`` declares the extension and
    serves every file of every skill, the skills' templates and ``skill://index.json``.

    Raises:
        SkillsError: the folder cannot be served (every problem is listed).
    """
    skills = load_skills(
        folder,
        templates=templates,
        max_file_bytes=max_file_bytes,
        max_files=max_files,
        max_depth=max_depth,
        cache=cache,
        archives=archives,
    )
    return skills.extension()
