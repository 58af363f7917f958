"""RFC 6570 URI Templates, levels 1–3, for MCP resource templates.

A ``UriTemplate`` goes both ways: ``expand`` fills variables in (RFC 6570 §3), and
``match`` takes a URI a client asked for and recovers the variables that would have
produced it — the direction a server needs to route ``resources/read``.
"""

# Theory of operation
#
# ``parse`` splits the template once into literal text and expressions. Each
# expression has an operator whose behaviour is one row of ``_OPERATORS`` (the table
# of RFC 6570 appendix A plus what matching needs); there is no per-operator code.
#
# Expansion follows appendix A: undefined (missing or None) variables are skipped,
# the operator's ``first`` prefix appears only if something was expanded, values are
# percent-encoded keeping unreserved characters (plus reserved characters and
# existing %XX triplets for ``+`` and ``#``). Literals are copied, encoding only
# characters that may not appear in a URI at all (§3.1).
#
# Matching compiles the template into one regular expression in ``parse``:
#
# * Positional operators (simple, ``+``, ``#``, ``.``, ``/``) get one capture group
#   per variable. A value may not contain the characters that delimit it in a URI
#   (``/ ? #`` for all but ``+``/``#``; the separator, except in the last variable of
#   an expression where it cannot be confused with a separator). Undefined variables
#   leave no trace in an expansion, so values are assigned left to right: ``{x,y}``
#   matching ``1024`` gives ``x``. For the simple and ``+`` operators an absent value
#   and an empty one look the same; the first variable is then reported as ``""``.
# * Named operators (``;``, ``?``, ``&``) get one group for the whole expression,
#   accepting the expression's parameters in any order, each optional; the group is
#   split into name/value pairs after the match. Parameters the template does not
#   name make the URI not match.
# * A value never runs into the text that follows its expression in the template:
#   the literal up to the next expression, or that expression's prefix (``.``, ``/``,
#   ``;``, ``?``, ``&``, ``#``). So ``{name}.txt`` gives ``my.notes`` for
#   ``my.notes.txt``, ``{+path}{?q}`` leaves the query to ``q``, and
#   ``{name}{.ext}`` reads ``a.tar.gz`` as ``a`` + ``tar.gz``. This makes every split
#   of a URI unambiguous, so values are matched possessively and a match costs
#   linear time whatever the URI — a plain backtracking regex takes minutes on a
#   few kilobytes against ``{y}-{m}-{d}``, and a synchronous match blocks the whole
#   trio run. Only an expression directly followed by a simple or ``+`` expression
#   (``{a}{b}``, which no URI can split reliably) falls back to backtracking.
# * Matching is lenient in one direction only: a value may hold characters that
#   expansion would have percent-encoded (``{id}`` matches ``a@b``), but a ``%`` must
#   start a well-formed triplet and decoded bytes must be UTF-8.
# * A variable used twice must match the same value both times.

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final, final
from urllib.parse import quote, unquote

import attrs

from .._exceptions import MCPActorError
from ..protocol import describe

__all__ = ["UriTemplate", "UriTemplateError", "is_uri_template"]


class UriTemplateError(MCPActorError, ValueError):
    """A URI template is malformed or uses a feature beyond RFC 6570 level 3."""

    def __init__(self, message: str, *, template: str, position: int) -> None:
        super().__init__(f"{message} (at offset {position} in URI template {describe(template)})")
        self.template = template
        self.position = position


@attrs.frozen
class _Operator:
    # expansion, RFC 6570 appendix A
    first: str
    sep: str
    named: bool
    ifemp: str
    allow_reserved: bool
    # matching: characters a value may never hold raw (the separator is added for
    # every positional variable but the last)
    delimiters: str


_OPERATORS: Final[Mapping[str, _Operator]] = {
    "": _Operator("", ",", named=False, ifemp="", allow_reserved=False, delimiters="/?#"),
    "+": _Operator("", ",", named=False, ifemp="", allow_reserved=True, delimiters=""),
    "#": _Operator("#", ",", named=False, ifemp="", allow_reserved=True, delimiters=""),
    ".": _Operator(".", ".", named=False, ifemp="", allow_reserved=False, delimiters="/?#"),
    "/": _Operator("/", "/", named=False, ifemp="", allow_reserved=False, delimiters="/?#"),
    ";": _Operator(";", ";", named=True, ifemp="", allow_reserved=False, delimiters="/?#;"),
    "?": _Operator("?", "&", named=True, ifemp="=", allow_reserved=False, delimiters="&#"),
    "&": _Operator("&", "&", named=True, ifemp="=", allow_reserved=False, delimiters="&#"),
}
# RFC 6570 §2.2 keeps these for future extensions.
_RESERVED_OPERATORS: Final = frozenset("=,!@|")

_RESERVED_CHARS: Final = ":/?#[]@!$&'()*+,;="
_PCT_TRIPLET: Final = re.compile(r"%[0-9A-Fa-f]{2}")
_VARNAME: Final = re.compile(r"(?:\w|%[0-9A-Fa-f]{2})(?:\.?(?:\w|%[0-9A-Fa-f]{2}))*", re.ASCII)
_HAS_EXPRESSION: Final = re.compile(r"\{[^{}]*\}")

_Value = str | int | float | None


def is_uri_template(s: str) -> bool:
    """Return whether ``s`` contains a ``{…}`` expression, i.e. is a template, not a URI."""
    return _HAS_EXPRESSION.search(s) is not None


def _encode_reserved(text: str) -> str:
    # Keep unreserved and reserved characters and existing %XX triplets, encode the
    # rest (including a "%" that starts no triplet) as UTF-8: RFC 6570 §3.1 for
    # literals, §3.2.3 for "+" and "#" values.
    out: list[str] = []
    start = 0
    for triplet in _PCT_TRIPLET.finditer(text):
        out.append(quote(text[start : triplet.start()], safe=_RESERVED_CHARS))
        out.append(triplet.group())
        start = triplet.end()
    out.append(quote(text[start:], safe=_RESERVED_CHARS))
    return "".join(out)


def _stringify(name: str, value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value)
    raise TypeError(
        f"value of URI template variable {describe(name)} must be a str, int or float, got"
        f" {type(value).__name__} (list and map values are RFC 6570 level 4, which is"
        " not supported)"
    )


def _value_pattern(excluded: str, stops: tuple[str, ...] | None, *, lazy: bool) -> str:
    # Any character but the excluded ones and "%", or a well-formed %XX triplet (the
    # two alternatives never match the same text). With ``stops`` known, the value
    # also may not run into the text that follows it, which makes every split of
    # the URI unambiguous, so the quantifier can be possessive: no backtracking.
    chars = "".join(sorted(set(excluded) | {"%"}))
    token = f"(?:[^{re.escape(chars)}]|%[0-9A-Fa-f]{{2}})"
    if stops is None:
        return token + ("*?" if lazy else "*")
    tempered = [re.escape(stop) for stop in stops if stop[0] not in excluded]
    if tempered:
        token = f"(?:(?!{'|'.join(tempered)}){token})"
    return token + "*+"


@attrs.frozen
class _Expression:
    operator: _Operator
    names: tuple[str, ...]

    def expand(self, values: Mapping[str, _Value]) -> str:
        op = self.operator
        pieces: list[str] = []
        for name in self.names:
            value = values.get(name)
            if value is None:
                continue
            text = _stringify(name, value)
            encoded = _encode_reserved(text) if op.allow_reserved else quote(text, safe="")
            if not op.named:
                pieces.append(encoded)
            elif text:
                pieces.append(f"{name}={encoded}")
            else:
                pieces.append(name + op.ifemp)
        if not pieces:
            return ""
        return op.first + op.sep.join(pieces)

    def pattern(self, stops: tuple[str, ...] | None) -> tuple[str, int]:
        """Return this expression's regex and how many groups it opens.

        ``stops`` are the texts that may follow the expression in the template
        (``()`` at the end, None when an expression without a prefix follows and the
        split has to be found by backtracking).
        """
        op = self.operator
        sep = re.escape(op.sep)
        possessive = "+" if stops is not None else ""
        if op.named:
            # Longest name first, so "ab" is not read as "a" followed by junk.
            alternatives = sorted(set(self.names), key=lambda n: (-len(n), n))
            names = "|".join(re.escape(n) for n in alternatives)
            value = _value_pattern(op.delimiters, stops, lazy=False)
            param = f"(?:{names})(?:={value})?{possessive}"
            return f"({re.escape(op.first)}{param}(?:{sep}{param})*{possessive})?", 1
        parts: list[str] = []
        last = len(self.names) - 1
        for i in range(len(self.names)):
            excluded = op.delimiters if i == last else op.delimiters + op.sep
            group = f"({_value_pattern(excluded, stops, lazy=op.allow_reserved)})"
            parts.append(group if i == 0 else f"(?:{sep}{group})?")
        body = "".join(parts)
        if op.first:
            return f"(?:{re.escape(op.first)}{body})?", len(self.names)
        return body, len(self.names)


def _parse_expression(template: str, start: int, end: int) -> _Expression:
    # ``template[start]`` is "{" and ``template[end]`` is "}".
    body = template[start + 1 : end]
    if not body:
        raise UriTemplateError("empty expression '{}'", template=template, position=start)
    op_char = body[0] if body[0] in _OPERATORS or body[0] in _RESERVED_OPERATORS else ""
    if op_char in _RESERVED_OPERATORS:
        raise UriTemplateError(
            f"operator {describe(op_char)} is reserved by RFC 6570 for future extensions",
            template=template,
            position=start + 1,
        )
    names: list[str] = []
    offset = start + 1 + len(op_char)
    for varspec in body[len(op_char) :].split(","):
        if varspec.endswith("*"):
            raise UriTemplateError(
                f"explode modifier in {describe(varspec)} is RFC 6570 level 4, which is "
                "not supported",
                template=template,
                position=offset,
            )
        if ":" in varspec:
            raise UriTemplateError(
                f"prefix modifier in {describe(varspec)} is RFC 6570 level 4, which is "
                "not supported",
                template=template,
                position=offset,
            )
        if not varspec:
            raise UriTemplateError(
                f"expected a variable name in expression {describe(template[start : end + 1])}",
                template=template,
                position=offset,
            )
        if _VARNAME.fullmatch(varspec) is None:
            raise UriTemplateError(
                f"invalid variable name {describe(varspec)}: expected letters, digits, '_',"
                " %XX triplets and single inner dots",
                template=template,
                position=offset,
            )
        names.append(varspec)
        offset += len(varspec) + 1
    return _Expression(_OPERATORS[op_char], tuple(names))


def _split(template: str) -> list[str | _Expression]:
    parts: list[str | _Expression] = []
    literal_start = 0
    i = 0
    while i < len(template):
        char = template[i]
        if char == "}":
            raise UriTemplateError("'}' without a matching '{'", template=template, position=i)
        if char != "{":
            i += 1
            continue
        end = template.find("}", i + 1)
        nested = template.find("{", i + 1, len(template) if end == -1 else end)
        if nested != -1:
            raise UriTemplateError(
                f"'{{' inside the expression opened at offset {i}",
                template=template,
                position=nested,
            )
        if end == -1:
            raise UriTemplateError("'{' is never closed by '}'", template=template, position=i)
        if literal_start < i:
            parts.append(template[literal_start:i])
        parts.append(_parse_expression(template, i, end))
        i = literal_start = end + 1
    if literal_start < len(template):
        parts.append(template[literal_start:])
    return parts


def _stops(follower: str | _Expression | None) -> tuple[str, ...] | None:
    # What the regex of an expression may not run into: the literal after it (as
    # expanded and as written), the prefix of the expression after it, or nothing at
    # the end of the template. An expression followed by a simple or "+" expression
    # has no such boundary; those splits are left to backtracking.
    if follower is None:
        return ()
    if isinstance(follower, str):
        return tuple(dict.fromkeys((_encode_reserved(follower), follower)))
    first = follower.operator.first
    return (first,) if first else None


def _decode(raw: str) -> str:
    # Raises UnicodeDecodeError when the %XX triplets are not UTF-8.
    return unquote(raw, errors="strict") if "%" in raw else raw


@final
@attrs.frozen
class UriTemplate:
    """A parsed RFC 6570 URI template (levels 1–3) that can expand and match URIs.

    Build one with ``UriTemplate.parse(template)``; the matcher is compiled then, once.
    Two templates are equal when their text is.
    """

    template: str
    variables: tuple[str, ...] = attrs.field(init=False)
    _parts: tuple[str | _Expression, ...] = attrs.field(init=False, repr=False, eq=False)
    _regex: re.Pattern[str] = attrs.field(init=False, repr=False, eq=False)
    # (group index, variable name) for positional values
    _positional: tuple[tuple[int, str], ...] = attrs.field(init=False, repr=False, eq=False)
    # (group index, separator) for named expressions, split after matching
    _named: tuple[tuple[int, str], ...] = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        parts: list[str | _Expression] = []
        names: dict[str, None] = {}
        regex: list[str] = []
        positional: list[tuple[int, str]] = []
        named: list[tuple[int, str]] = []
        group = 1
        split = _split(self.template)
        for i, part in enumerate(split):
            if isinstance(part, str):
                encoded = _encode_reserved(part)
                parts.append(encoded)
                if encoded == part:
                    regex.append(re.escape(part))
                else:
                    # Accept the literal as written too, e.g. an IRI with raw "é".
                    regex.append(f"(?:{re.escape(encoded)}|{re.escape(part)})")
                continue
            parts.append(part)
            names.update(dict.fromkeys(part.names))
            pattern, groups = part.pattern(_stops(split[i + 1] if i + 1 < len(split) else None))
            regex.append(pattern)
            if part.operator.named:
                named.append((group, part.operator.sep))
            else:
                positional.extend((group + j, name) for j, name in enumerate(part.names))
            group += groups
        object.__setattr__(self, "variables", tuple(names))
        object.__setattr__(self, "_parts", tuple(parts))
        object.__setattr__(self, "_regex", re.compile("".join(regex)))
        object.__setattr__(self, "_positional", tuple(positional))
        object.__setattr__(self, "_named", tuple(named))

    @classmethod
    def parse(cls, template: str) -> UriTemplate:
        """Parse ``template`` and compile its matcher.

        Raises:
            UriTemplateError: (a ``ValueError``) if the template is malformed or uses
                level-4 modifiers (``*``, ``:n``); the message gives the offset.
        """
        return cls(template)

    def is_template(self) -> bool:
        """Return whether the template has at least one expression."""
        return any(isinstance(part, _Expression) for part in self._parts)

    def expand(self, values: Mapping[str, str | int | float | None]) -> str:
        """Expand the template; missing and ``None`` values are undefined (RFC 6570 §3).

        Raises:
            TypeError: if a value is not a str, int, float or None.
        """
        return "".join(
            part if isinstance(part, str) else part.expand(values) for part in self._parts
        )

    def match(self, uri: str) -> dict[str, str] | None:
        """Return the percent-decoded variables of ``uri`` if this template produces it.

        Variables that the URI leaves undefined are absent from the result, except that
        an empty simple or ``+`` expression reports its first variable as ``""``. A
        value never contains the template text that follows it (``{name}.txt`` reads
        ``a.b.txt`` as ``a.b``, but ``{a}-{b}`` reads ``1-2-3`` as ``1`` and ``2-3``).
        Query and path-style parameters may come in any order; one the template does
        not name, or a name given two different values, is no match.

        Returns:
            The variables, or None if this template cannot produce ``uri``.
        """
        found = self._regex.fullmatch(uri)
        if found is None:
            return None
        result: dict[str, str] = {}
        try:
            for index, name in self._positional:
                raw = found.group(index)
                if raw is None:
                    continue
                value = _decode(raw)
                if result.setdefault(name, value) != value:
                    return None
            for index, sep in self._named:
                region = found.group(index)
                if not region:
                    continue
                # The regex admitted only this expression's names, so just split.
                for param in region[1:].split(sep):
                    name, _, raw = param.partition("=")
                    value = _decode(raw)
                    if result.setdefault(name, value) != value:
                        return None
        except UnicodeDecodeError:
            return None
        return result
