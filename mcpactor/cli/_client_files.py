"""Clients' configuration files: one entry set in a JSON, JSONC, YAML or TOML file.

Each function takes the file's text (None when there is none) and returns the new text
with ``servers_key.name`` set, or raises ``ConfigError`` naming the file, and where it
can the line, when the text is not a configuration it can change safely. The rules:

- The entry of that name keeps the keys it has that the new one does not set, and its
  environment unless one is given (``env_given``).
- Nothing else changes. JSON and JSONC are edited in place: only the text of the entry
  (or the new member holding it) is written, so every other byte, comments and trailing
  commas included, stays as it was. TOML likewise: the entry's table is appended, or its
  own lines replaced. YAML (Goose writes its file itself) is read and written whole, and a
  file with comments, which that would lose, is refused.
- The result is read back and must hold exactly what was asked for; if not, nothing is
  written (an error, rather than a file the client cannot read).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from .._exceptions import ConfigError

__all__ = ["merged_entry", "set_json_entry", "set_toml_entry", "set_yaml_entry"]

_LEFT: Final = "the file is left as it is"


def merged_entry(
    old: Any, entry: Mapping[str, Any], *, env_field: str, env_given: bool
) -> dict[str, Any]:
    """``entry`` over ``old`` (an existing entry, or anything else for none)."""
    new = dict(old) if isinstance(old, dict) else {}
    for field, value in entry.items():
        if field == env_field and not env_given and isinstance(new.get(field), dict):
            continue
        new[field] = value
    return new


def _servers(data: Any, key: str, source: Path) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}: expected an object at the top, got {_kind(type(data))}; {_LEFT}"
        )
    servers = data.get(key, {})
    if not isinstance(servers, dict):
        raise ConfigError(
            f"{source}: {key}: expected an object of servers, got {_kind(type(servers))}; {_LEFT}"
        )
    return servers


_KINDS: Final[dict[type, str]] = {dict: "object", list: "list", str: "string"}


def _kind(kind: type) -> str:
    return _KINDS.get(kind, kind.__name__)


def _check(result: Any, expected: Any, source: Path) -> None:
    # The safety net of every format: what the new text says is what was meant.
    if result != expected:
        raise ConfigError(f"{source}: the entry could not be added safely; {_LEFT}")


# --- JSON and JSONC ----------------------------------------------------------------------
#
# JSONC (VS Code's mcp.json, Zed's and Gemini CLI's settings) is JSON with // and /* */
# comments and trailing commas. Blanking them (each character replaced by a space, line
# ends kept) leaves text that json reads, with every position unchanged: errors name the
# file's own line and column, and the scanner below finds members' spans in the original.


def set_json_entry(
    text: str | None,
    key: str,
    name: str,
    entry: Mapping[str, Any],
    *,
    source: Path,
    jsonc: bool,
    env_given: bool,
    env_field: str = "env",
) -> str:
    """``text`` with ``entry`` as ``key.name``, edited in place (see the module)."""
    if text is None or not text.strip():
        return json.dumps({key: {name: dict(entry)}}, indent=2, ensure_ascii=False) + "\n"
    blank = _blanked(text) if jsonc else text
    data = _json_loads(blank, source, jsonc=jsonc)
    servers = _servers(data, key, source)
    old = servers.get(name)
    new = merged_entry(old, entry, env_field=env_field, env_given=env_given)
    if old == new:
        return text
    unit = _indent_unit(text)
    top = _object_at(blank, _skip_space(blank, 0))
    if key not in data:
        value = {name: new}
        result = _insert_member(text, blank, top, key, value, unit)
    else:
        holder = top.members[key]
        inner = _object_at(blank, holder.value_start)
        if name in inner.members:
            member = inner.members[name]
            indent = _line_indent(text, member.key_start)
            dumped = _dump_json(new, unit, indent)
            result = text[: member.value_start] + dumped + text[member.value_end :]
        else:
            result = _insert_member(text, blank, inner, name, new, unit)
    expected = dict(data)
    expected[key] = {**servers, name: new}
    _check(
        _json_loads(_blanked(result) if jsonc else result, source, jsonc=jsonc), expected, source
    )
    return result


def _json_loads(text: str, source: Path, *, jsonc: bool) -> Any:
    try:
        return json.loads(_no_trailing_commas(text) if jsonc else text)
    except json.JSONDecodeError as exc:
        what = "JSON (comments and trailing commas allowed)" if jsonc else "JSON"
        raise ConfigError(
            f"{source}:{exc.lineno}:{exc.colno}: not valid {what} ({exc.msg}); {_LEFT}: fix "
            "it, or give another file with --config-file"
        ) from None
    except RecursionError:
        raise ConfigError(f"{source}: nested too deeply; {_LEFT}") from None


def _blanked(text: str) -> str:
    # Comments to spaces (line ends kept), outside strings.
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            i = _string_end(text, i)
            continue
        if ch == "/" and text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out[i:end] = " " * (end - i)
            i = end
            continue
        if ch == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out[i:end] = ["\n" if c == "\n" else " " for c in text[i:end]]
            i = end
            continue
        i += 1
    return "".join(out)


def _no_trailing_commas(blank: str) -> str:
    # A comma followed (past whitespace) by a closing bracket becomes a space.
    out = list(blank)
    i, n = 0, len(blank)
    while i < n:
        ch = blank[i]
        if ch == '"':
            i = _string_end(blank, i)
            continue
        if ch == ",":
            j = _skip_space(blank, i + 1)
            if j < n and blank[j] in "}]":
                out[i] = " "
        i += 1
    return "".join(out)


def _string_end(text: str, start: int) -> int:
    # The index after the closing quote of the string opening at ``start``.
    i, n = start + 1, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
        elif ch == '"':
            return i + 1
        else:
            i += 1
    return n


def _skip_space(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in " \t\r\n":
        i += 1
    return i


class _Member:
    __slots__ = ("key_start", "value_end", "value_start")

    def __init__(self, key_start: int, value_start: int, value_end: int) -> None:
        self.key_start = key_start
        self.value_start = value_start
        self.value_end = value_end


class _Object:
    __slots__ = ("close", "members", "open", "order")

    def __init__(self, open_: int, close: int, members: dict[str, _Member], order: list[_Member]):
        self.open = open_
        self.close = close
        #: by key (a key given twice: the last, as json reads it)
        self.members = members
        #: in the text's order
        self.order = order


def _object_at(blank: str, start: int) -> _Object:
    # The object opening at ``start`` of text that json has already read (so it is well
    # formed, but for the trailing commas JSONC allows).
    assert blank[start] == "{"
    members: dict[str, _Member] = {}
    order: list[_Member] = []
    i = _skip_space(blank, start + 1)
    while blank[i] != "}":
        key_start = i
        key_end = _string_end(blank, i)
        key = json.loads(blank[key_start:key_end])
        i = _skip_space(blank, key_end)
        assert blank[i] == ":"
        value_start = _skip_space(blank, i + 1)
        value_end = _value_end(blank, value_start)
        member = _Member(key_start, value_start, value_end)
        members[key] = member
        order.append(member)
        i = _skip_space(blank, value_end)
        if blank[i] == ",":
            i = _skip_space(blank, i + 1)
    return _Object(start, i, members, order)


def _value_end(blank: str, i: int) -> int:
    ch = blank[i]
    if ch == '"':
        return _string_end(blank, i)
    if ch in "{[":
        depth = 0
        n = len(blank)
        while i < n:
            ch = blank[i]
            if ch == '"':
                i = _string_end(blank, i)
                continue
            if ch in "{[":
                depth += 1
            elif ch in "}]":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        return n
    match = re.compile(r"[^\s,}\]]+").match(blank, i)
    assert match is not None
    return match.end()


def _indent_unit(text: str) -> str:
    # The first indented line says how the file is indented.
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            return line[: len(line) - len(stripped)]
    return "  "


def _line_indent(text: str, index: int) -> str:
    start = text.rfind("\n", 0, index) + 1
    line = text[start:index]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _dump_json(value: Any, unit: str, indent: str) -> str:
    dumped = json.dumps(value, indent=unit, ensure_ascii=False)
    return dumped.replace("\n", "\n" + indent)


def _insert_member(text: str, blank: str, obj: _Object, key: str, value: Any, unit: str) -> str:
    encoded_key = json.dumps(key, ensure_ascii=False)
    if not obj.order:
        outer = _line_indent(text, obj.open)
        indent = outer + unit
        member = f"\n{indent}{encoded_key}: {_dump_json(value, unit, indent)}\n{outer}"
        # Whatever the empty object held (a comment, say) stays, before the new member.
        inside = text[obj.open + 1 : obj.close].rstrip(" \t\n\r")
        return text[: obj.open + 1] + inside + member + text[obj.close :]
    last = obj.order[-1]
    indent = _line_indent(text, last.key_start)
    member = f"{encoded_key}: {_dump_json(value, unit, indent)}"
    after = _skip_space(blank, last.value_end)
    trailing_comma = blank[after] == ","
    # After the last member, and past a comment that ends its line, so the comment stays
    # with the member it was written for.
    anchor = after + 1 if trailing_comma else last.value_end
    line_end = blank.find("\n", anchor)
    if line_end >= 0 and not blank[anchor:line_end].strip() and line_end < obj.close:
        position = line_end
    else:
        position = anchor
    inserted = f"\n{indent}{member}" + ("," if trailing_comma else "")
    head = text[:position]
    if not trailing_comma:
        head = text[: last.value_end] + "," + text[last.value_end : position]
    return head + inserted + text[position:]


# --- YAML (Goose) ------------------------------------------------------------------------


def set_yaml_entry(
    text: str | None,
    key: str,
    name: str,
    entry: Mapping[str, Any],
    *,
    source: Path,
    env_given: bool,
    env_field: str = "envs",
) -> str:
    """``text`` with ``entry`` as ``key.name``, read and written whole (see the module)."""
    import importlib

    try:
        # Untyped (its stubs are no dependency): it is used as Any.
        yaml: Any = importlib.import_module("yaml")
    except ModuleNotFoundError:
        raise ConfigError(
            f"{source}: this client's file is YAML, which needs PyYAML: pip install pyyaml"
        ) from None
    data: Any = {}
    if text is not None and text.strip():
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise ConfigError(f"{source}{where}: not valid YAML ({problem}); {_LEFT}") from None
        if data is None:
            data = {}
        comment = _yaml_comment_line(text, yaml)
        if comment is not None:
            raise ConfigError(
                f"{source}:{comment}: has comments, which writing the file again would lose; "
                f"{_LEFT}: add the entry by hand (--print shows it)"
            )
    servers = _servers(data, key, source)
    old = servers.get(name)
    new = merged_entry(old, entry, env_field=env_field, env_given=env_given)
    if old == new and text is not None:
        return text
    expected = dict(data)
    expected[key] = {**servers, name: new}
    result: str = yaml.safe_dump(
        expected, sort_keys=False, default_flow_style=False, allow_unicode=True, width=1 << 16
    )
    _check(yaml.safe_load(result), expected, source)
    return result


def _yaml_comment_line(text: str, yaml: Any) -> int | None:
    # The line of the first comment: a ``#`` outside every scalar, at a line's start or
    # after whitespace. The scanner skips comments, so the scalars' spans tell them apart.
    spans = [
        (token.start_mark.index, token.end_mark.index)
        for token in yaml.scan(text)
        if isinstance(token, yaml.ScalarToken)
    ]
    for match in re.finditer(r"(?:^|(?<=\s))#", text, re.M):
        at = match.start()
        if not any(start <= at < end for start, end in spans):
            return text.count("\n", 0, at) + 1
    return None


# --- TOML (Codex) ------------------------------------------------------------------------


def set_toml_entry(
    text: str | None,
    key: str,
    name: str,
    entry: Mapping[str, Any],
    *,
    source: Path,
    env_given: bool,
    env_field: str = "env",
) -> str:
    """``text`` with ``entry`` as the table ``[key.name]`` (see the module)."""
    import tomllib

    text = text or ""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML ({exc}); {_LEFT}") from None
    servers = _servers(data, key, source)
    old = servers.get(name)
    new = merged_entry(old, entry, env_field=env_field, env_given=env_given)
    if old == new and text.strip():
        return text
    table = f"[{_toml_key(key)}.{_toml_key(name)}]\n" + "".join(
        f"{_toml_key(field)} = {_toml_value(value)}\n" for field, value in new.items()
    )
    if old is None:
        result = text + ("\n" if text and not text.endswith("\n") else "")
        result += ("\n" if result.strip() else "") + table
    else:
        span = _toml_table_span(text, key, name)
        if span is None:
            raise ConfigError(
                f"{source}: {key}.{name} is not written as a [{key}.{name}] table, so it "
                f"cannot be replaced here; {_LEFT}: edit it by hand (--print shows it)"
            )
        start, end = span
        result = text[:start] + table + ("\n" if end < len(text) else "") + text[end:]
    expected = dict(data)
    expected[key] = {**servers, name: new}
    try:
        reread = tomllib.loads(result)
    except tomllib.TOMLDecodeError:
        reread = None
    _check(reread, expected, source)
    return result


_BARE_KEY: Final = re.compile(r"[A-Za-z0-9_-]+")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _toml_string(key)


def _toml_string(text: str) -> str:
    # A basic string: TOML's escapes for the quote, the backslash and control characters
    # (DEL included), everything else as it is.
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch < " " or ch == "\x7f":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        items = ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items())
        return "{ " + items + " }" if items else "{}"
    raise ConfigError(f"cannot write a {type(value).__name__} in TOML: {value!r}")


def _toml_table_span(text: str, key: str, name: str) -> tuple[int, int] | None:
    # The lines of the table ``[key.name]`` and its sub-tables, up to the next header of
    # another table (or the end).
    headers = list(re.finditer(r"^[ \t]*\[\[?[ \t]*(.+?)[ \t]*\]\]?[ \t]*(?:#.*)?$", text, re.M))
    start = None
    for index, header in enumerate(headers):
        path = _toml_header_path(header.group(1))
        if path == [key, name]:
            start = header.start()
            for later in headers[index + 1 :]:
                inner = _toml_header_path(later.group(1))
                if inner is None or inner[:2] != [key, name]:
                    return start, later.start()
            return start, len(text)
    return None


def _toml_header_path(header: str) -> list[str] | None:
    import tomllib

    try:
        parsed = tomllib.loads(f"[{header}]\n")
    except tomllib.TOMLDecodeError:
        return None
    path: list[str] = []
    node: Any = parsed
    while isinstance(node, dict) and len(node) == 1:
        (part,) = node
        path.append(part)
        node = node[part]
    return path
