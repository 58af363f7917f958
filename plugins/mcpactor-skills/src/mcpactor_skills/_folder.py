# A folder of skills, read and checked once at start-up.
#
# Every directory of the folder holding a SKILL.md is a skill; the directories above it
# are its prefix (``acme/billing/refunds``: prefix ``acme/billing``, name ``refunds``).
# A skill's files are every regular file below its directory, hidden ones (``.git``,
# ``.DS_Store``) and byte code (``__pycache__``) left out. Each SKILL.md must start with
# YAML frontmatter whose fields follow the Agent Skills specification, and whose
# ``name`` is its directory's name.
#
# Nothing outside the folder is ever served: a symlink is served only when it leads to
# a file inside its own skill that is not hidden (as that file), and one leading anywhere
# else stops the start-up; symlinked directories are not entered. Everything is
# bounded: the files of a folder, the depth of a path, the size of a SKILL.md. Every
# problem found is reported at once, the first on the error's first line.

from __future__ import annotations

import os
import re
import stat
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import yaml  # type: ignore[import-untyped]  # no stubs: only safe_load is used

from ._files import served_name

__all__ = ["Skill", "SkillsError", "read_folder", "skill_file_uri"]

#: the scheme skills are served under
SCHEME: Final = "skill://"
SKILL_FILE: Final = "SKILL.md"
#: the Agent Skills naming rule: lowercase letters, digits, single hyphens inside
_NAME: Final = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_MAX_NAME: Final = 64
_MAX_DESCRIPTION: Final = 1024
_MAX_COMPATIBILITY: Final = 500
#: what a prefix segment may be: RFC 3986 unreserved characters, so it needs no quoting
_SEGMENT: Final = re.compile(r"[A-Za-z0-9._~-]+")
#: characters of a file path segment left as they are in a URI (RFC 3986 pchar)
_PCHAR: Final = "-._~!$&'()*+,;=:@"
_PROBLEMS_SHOWN: Final = 20


class SkillsError(ValueError):
    """A folder of skills that cannot be served: what is wrong, and where."""

    def __init__(self, folder: str, problems: list[str]) -> None:
        self.folder = folder
        #: every problem found, each naming its file
        self.problems = problems
        # The first line is what a start-up report shows: it says how many follow.
        first = f"skills folder {folder!r}: {problems[0]}"
        if len(problems) > 1:
            first += f" (and {len(problems) - 1} more)"
        lines = [first]
        more = problems[1:_PROBLEMS_SHOWN]
        if more:
            lines.extend(f"  - {problem}" for problem in more)
            if len(problems) > _PROBLEMS_SHOWN:
                lines.append(f"  - … {len(problems) - _PROBLEMS_SHOWN} not shown")
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class Skill:
    """One skill of a folder: where it is served and what its frontmatter says."""

    #: the skill path, ``/``-separated: the prefix, then the name
    path: str
    #: the frontmatter's ``name`` (the path's last segment)
    name: str
    #: the frontmatter's ``description``
    description: str
    #: the skill's directory, as a real path
    directory: str
    #: the files served, as ``/``-separated paths below ``directory``, sorted
    files: tuple[str, ...]
    #: the files that are symlinks, and the file (below ``directory``) each leads to
    links: Mapping[str, str] = field(default_factory=dict)
    #: the whole frontmatter, as parsed
    frontmatter: Mapping[str, Any] = field(default_factory=dict)

    @property
    def uri(self) -> str:
        """The URI of its SKILL.md."""
        return skill_file_uri(self.path, SKILL_FILE)


def skill_file_uri(skill_path: str, file: str) -> str:
    """The ``skill://`` URI of ``file`` (``/``-separated) of the skill at ``skill_path``."""
    quoted = "/".join(urllib.parse.quote(part, safe=_PCHAR) for part in file.split("/"))
    return f"{SCHEME}{skill_path}/{quoted}"


@dataclass
class _Scan:
    """What reading a folder found, and what it found wrong."""

    root: str
    max_files: int
    max_depth: int
    max_file_bytes: int
    skills: list[Skill] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    files: int = 0

    def shown(self, path: str) -> str:
        return _printable(os.path.relpath(path, self.root).replace(os.sep, "/"))


def read_folder(
    folder: str | os.PathLike[str],
    *,
    max_files: int,
    max_depth: int,
    max_file_bytes: int,
) -> tuple[str, tuple[Skill, ...]]:
    """The real path of ``folder`` and its skills, sorted by path.

    Raises:
        SkillsError: the folder is not a directory, holds no skill, or something in it
            breaks a rule above (every problem is listed).
    """
    given = os.fspath(folder)
    root = os.path.realpath(os.path.expanduser(given))
    if not os.path.isdir(root):
        raise SkillsError(given, ["not a directory"])
    scan = _Scan(root, max_files=max_files, max_depth=max_depth, max_file_bytes=max_file_bytes)
    _walk(scan, root, ())
    if not scan.skills and not scan.problems:
        scan.problems.append(f"no skill in it: no directory below it holds a {SKILL_FILE}")
    if scan.problems:
        raise SkillsError(given, scan.problems)
    return root, tuple(sorted(scan.skills, key=lambda skill: skill.path))


def _entries(directory: str) -> list[os.DirEntry[str]]:
    with os.scandir(directory) as found:
        return sorted((entry for entry in found if served_name(entry.name)), key=_name)


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _walk(scan: _Scan, directory: str, prefix: tuple[str, ...]) -> None:
    """Look for skills in ``directory``, whose path below the root is ``prefix``."""
    if len(prefix) > scan.max_depth:
        scan.problems.append(f"{scan.shown(directory)}: deeper than {scan.max_depth} levels")
        return
    entries = _entries(directory)
    if any(entry.name == SKILL_FILE for entry in entries):
        _add_skill(scan, directory, prefix)
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            _walk(scan, entry.path, (*prefix, entry.name))


def _add_skill(scan: _Scan, directory: str, prefix: tuple[str, ...]) -> None:
    path = "/".join(prefix)
    if not prefix:
        scan.problems.append(
            f"{SKILL_FILE} is at the top of the folder: each skill is a directory below it"
        )
        return
    bad = [segment for segment in prefix[:-1] if not _SEGMENT.fullmatch(segment)]
    if bad:
        scan.problems.append(
            f"{scan.shown(directory)}: the prefix directory {bad[0]!r} may hold only letters, "
            "digits and '-', '.', '_', '~'"
        )
        return
    found = dict(_skill_files(scan, directory, directory, 0))
    skill_md = os.path.join(directory, SKILL_FILE)
    frontmatter = _frontmatter(scan, skill_md)
    if frontmatter is None:
        return
    problems = _field_problems(frontmatter, prefix[-1])
    shown = scan.shown(skill_md)
    scan.problems.extend(f"{shown}: {problem}" for problem in problems)
    if problems:
        return
    scan.skills.append(
        Skill(
            path=path,
            name=frontmatter["name"],
            description=frontmatter["description"],
            directory=directory,
            files=tuple(sorted(found)),
            links={path: real for path, real in found.items() if path != real},
            frontmatter=frontmatter,
        )
    )


def _skill_files(scan: _Scan, skill: str, directory: str, depth: int) -> Iterator[tuple[str, str]]:
    """The files of the skill at ``skill`` below ``directory``, as ``/`` paths: each
    with the path of the file read for it (another for a symlink)."""
    if depth > scan.max_depth:
        scan.problems.append(f"{scan.shown(directory)}: deeper than {scan.max_depth} levels")
        return
    for entry in _entries(directory):
        relative = real = os.path.relpath(entry.path, skill).replace(os.sep, "/")
        if not _utf8(entry.name):
            # Undecodable bytes of the name: no URI can name the file.
            scan.problems.append(f"{scan.shown(entry.path)}: a name that is not UTF-8")
            continue
        mode = entry.stat(follow_symlinks=False).st_mode
        if stat.S_ISLNK(mode):
            target = os.path.realpath(entry.path)
            if os.path.commonpath((target, skill)) != skill:
                scan.problems.append(
                    f"{scan.shown(entry.path)}: a symlink leading outside its skill"
                )
                continue
            if not os.path.isfile(target):
                continue  # a symlinked directory is not entered
            real = os.path.relpath(target, skill).replace(os.sep, "/")
            if not all(map(served_name, real.split("/"))):
                scan.problems.append(f"{scan.shown(entry.path)}: a symlink to a hidden file")
                continue
        elif stat.S_ISDIR(mode):
            if os.path.lexists(os.path.join(entry.path, SKILL_FILE)):
                scan.problems.append(
                    f"{scan.shown(entry.path)}: a skill inside the skill "
                    f"{scan.shown(skill)!r} (skills do not nest)"
                )
                continue
            yield from _skill_files(scan, skill, entry.path, depth + 1)
            continue
        elif not stat.S_ISREG(mode):
            continue  # a FIFO or a device is not a file to serve
        scan.files += 1
        if scan.files == scan.max_files + 1:
            scan.problems.append(f"more than {scan.max_files} files")
        if scan.files <= scan.max_files:
            yield relative, real


def _utf8(name: str) -> bool:
    # os.scandir keeps a name's undecodable bytes as lone surrogates.
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _printable(path: str) -> str:
    # A path with undecodable bytes, shown with them escaped.
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _frontmatter(scan: _Scan, path: str) -> dict[str, Any] | None:
    """The parsed frontmatter of the SKILL.md at ``path``; None after noting a problem."""
    shown = scan.shown(path)
    try:
        with open(path, "rb") as file:
            data = file.read(scan.max_file_bytes + 1)
    except OSError as exc:
        scan.problems.append(f"{shown}: cannot be read ({exc.strerror})")
        return None
    if len(data) > scan.max_file_bytes:
        scan.problems.append(f"{shown}: longer than {scan.max_file_bytes} bytes")
        return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        scan.problems.append(f"{shown}: not UTF-8 text")
        return None
    lines = text.splitlines()
    if not lines or lines[0].rstrip() != "---":
        scan.problems.append(f"{shown}: does not start with YAML frontmatter ('---' line)")
        return None
    try:
        end = next(i for i, line in enumerate(lines[1:], 1) if line.rstrip() == "---")
    except StopIteration:
        scan.problems.append(f"{shown}: the frontmatter has no closing '---' line")
        return None
    try:
        parsed = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 2})" if where is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        scan.problems.append(f"{shown}: the frontmatter is not valid YAML{line}: {problem}")
        return None
    if not isinstance(parsed, dict):
        scan.problems.append(f"{shown}: the frontmatter is not a mapping of fields")
        return None
    return parsed


def _field_problems(frontmatter: Mapping[str, Any], directory: str) -> list[str]:
    """What breaks the Agent Skills specification's frontmatter rules."""
    problems: list[str] = []
    name = frontmatter.get("name")
    if name is None:
        problems.append("the frontmatter has no 'name'")
    elif not isinstance(name, str):
        problems.append(f"'name' must be a string, got {type(name).__name__}")
    elif len(name) > _MAX_NAME or not _NAME.fullmatch(name):
        problems.append(
            f"'name' {name[:80]!r} must be 1-{_MAX_NAME} lowercase letters, digits and "
            "single hyphens, not starting or ending with one"
        )
    elif name != directory:
        problems.append(f"'name' {name!r} is not the name of its directory {directory!r}")
    description = frontmatter.get("description")
    if description is None:
        problems.append("the frontmatter has no 'description'")
    elif not isinstance(description, str) or not description.strip():
        problems.append("'description' must be a non-empty string")
    elif len(description) > _MAX_DESCRIPTION:
        problems.append(f"'description' is longer than {_MAX_DESCRIPTION} characters")
    for key in ("license", "allowed-tools", "compatibility"):
        value = frontmatter.get(key)
        if value is not None and not isinstance(value, str):
            problems.append(f"{key!r} must be a string, got {type(value).__name__}")
    compatibility = frontmatter.get("compatibility")
    if isinstance(compatibility, str) and len(compatibility) > _MAX_COMPATIBILITY:
        problems.append(f"'compatibility' is longer than {_MAX_COMPATIBILITY} characters")
    metadata = frontmatter.get("metadata")
    if metadata is not None and not (
        isinstance(metadata, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    ):
        problems.append("'metadata' must map strings to strings (quote numbers and dates)")
    return problems
