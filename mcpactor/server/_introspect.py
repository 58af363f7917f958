"""Reading Python callables and types: annotations, type hints, model fields, docstrings."""

# What the schema builder needs to know of a handler and of the models it uses, read at
# registration with errors that name the function or class (a SchemaError).

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import re
import types
import typing
from typing import (
    Annotated,
    Any,
    Final,
    Literal,
    NotRequired,
    Required,
    Union,
    get_args,
    get_origin,
)

import attrs

from .._exceptions import SchemaError


class _Missing(enum.Enum):
    MISSING = enum.auto()


_MISSING: Final = _Missing.MISSING


class _Field:
    # A plain class, not attrs: private, never compared, and an attrs class costs every
    # start-up its build.
    __slots__ = ("annotation", "attribute", "default", "description", "key", "required")

    def __init__(
        self,
        key: str,
        attribute: str,
        annotation: Any,
        default: Any,
        required: bool,
        description: str | None,
    ) -> None:
        self.key = key  # the JSON property and the __init__ keyword
        self.attribute = attribute  # what to read when dumping an instance
        self.annotation = annotation
        self.default = default  # _MISSING: none, or one we cannot show (a factory)
        self.required = required
        self.description = description


# --- model introspection -----------------------------------------------------------


def _model_fields(cls: type) -> list[_Field]:
    """The constructor arguments of an attrs class or dataclass, as fields."""
    hints = _type_hints(cls, cls.__qualname__)
    if attrs.has(cls):
        return [
            _Field(
                key=attribute.alias,
                attribute=attribute.name,
                annotation=hints.get(attribute.name, Any),
                # A factory could be `datetime.now`: do not call it to show a default.
                default=(
                    _MISSING
                    if attribute.default is attrs.NOTHING
                    or isinstance(attribute.default, attrs.Factory)  # type: ignore[arg-type]
                    else attribute.default
                ),
                required=attribute.default is attrs.NOTHING,
                description=attribute.metadata.get("description"),
            )
            for attribute in attrs.fields(cls)
            if attribute.init
        ]
    for name, hint in hints.items():
        if isinstance(hint, dataclasses.InitVar):
            raise SchemaError(f"{cls.__qualname__}.{name} is an InitVar, which is not supported")
    return [
        _Field(
            key=field.name,
            attribute=field.name,
            annotation=hints.get(field.name, Any),
            default=_MISSING if field.default is dataclasses.MISSING else field.default,
            required=(
                field.default is dataclasses.MISSING
                and field.default_factory is dataclasses.MISSING
            ),
            description=field.metadata.get("description"),
        )
        for field in dataclasses.fields(cls)
        if field.init
    ]


def _typeddict_fields(cls: type) -> list[_Field]:
    hints = _type_hints(cls, cls.__qualname__)
    # With string annotations (PEP 563) Python 3.11 cannot see Required/NotRequired when
    # it builds __required_keys__, so the resolved hints have the last word.
    required_keys: frozenset[str] = getattr(cls, "__required_keys__", frozenset())
    fields = []
    for key, hint in hints.items():
        annotation, description, required = hint, None, key in required_keys
        while True:
            origin = get_origin(annotation)
            if origin is Annotated:
                annotation, found = _split_annotated(annotation)
                description = description or found
            elif origin is Required or origin is NotRequired:
                required = origin is Required
                annotation = get_args(annotation)[0]
            else:
                break
        fields.append(_Field(key, key, annotation, _MISSING, required, description))
    return fields


def _is_typeddict(cls: type) -> bool:
    # Duck-typed so typing_extensions.TypedDict classes count too.
    return issubclass(cls, dict) and hasattr(cls, "__required_keys__")


def _class_description(cls: type) -> str | None:
    doc = cls.__dict__.get("__doc__")
    if not isinstance(doc, str) or not doc.strip():
        return None
    if dataclasses.is_dataclass(cls) and doc.startswith(f"{cls.__name__}("):
        return None  # the signature dataclasses writes when there is no docstring
    return inspect.cleandoc(doc).split("\n\n", 1)[0].replace("\n", " ")


# --- annotations and callables -------------------------------------------------------


def _split_annotated(annotation: Any) -> tuple[Any, str | None]:
    """Return (the annotated type, the first plain-string metadata as its description)."""
    if get_origin(annotation) is not Annotated:
        return annotation, None
    inner, *metadata = get_args(annotation)
    return inner, next((item for item in metadata if isinstance(item, str)), None)


def _is_context(annotation: Any, context_types: tuple[type, ...]) -> bool:
    if not context_types:
        return False
    annotation, _ = _split_annotated(annotation)
    if get_origin(annotation) in (Union, types.UnionType):  # Context | None
        members = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(members) != 1:
            return False
        annotation = members[0]
    cls = get_origin(annotation) or annotation  # Context[AppState]
    return isinstance(cls, type) and issubclass(cls, context_types)


def _mentions(annotation: Any, classes: tuple[type, ...]) -> bool:
    """Whether ``annotation`` is, or contains (list[X], X | Y, ...), one of ``classes``."""
    if not classes:
        return False
    annotation, _ = _split_annotated(annotation)
    origin = get_origin(annotation)
    if origin is Literal:
        return False
    cls = annotation if origin is None else origin
    if isinstance(cls, type) and issubclass(cls, classes):
        return True
    return any(_mentions(arg, classes) for arg in get_args(annotation))


def _callable_name(fn: Any) -> str:
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    return name if isinstance(name, str) else repr(fn)


def _annotated_target(fn: Any) -> Any:
    """The object whose annotations describe calling ``fn``."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if isinstance(fn, type):
        return typing.cast(Any, fn).__init__
    if inspect.isroutine(fn):
        return fn
    return type(fn).__call__  # a callable instance


def _type_hints(target: Any, where: str) -> dict[str, Any]:
    try:
        return typing.get_type_hints(target, include_extras=True)
    except (NameError, TypeError, SyntaxError, AttributeError) as exc:
        raise SchemaError(
            f"cannot resolve the annotations of {where}: {exc}; types named in annotations "
            "must be importable from the module that uses them (not only under TYPE_CHECKING)"
        ) from exc


_SECTION_RE: Final = re.compile(r"(?:Args|Arguments|Parameters|Keyword Args|Keyword Arguments):")
_ENTRY_RE: Final = re.compile(r"\*{0,2}(?P<name>\w+)\s*(?:\([^)]*\))?\s*:(?P<text>.*)")


def _docstring_args(doc: str | None) -> dict[str, str]:
    """Parameter descriptions from a Google-style ``Args:`` section."""
    if not doc:
        return {}
    found: dict[str, list[str]] = {}
    section: int | None = None  # indentation of the section header while inside it
    entry: int | None = None  # indentation of its entries
    current: list[str] | None = None
    for line in inspect.cleandoc(doc).splitlines():
        text = line.strip()
        indent = len(line) - len(line.lstrip())
        if section is not None and text and indent <= section:
            section = None
        if section is None:
            if _SECTION_RE.fullmatch(text):
                section, entry, current = indent, None, None
            continue
        if not text:
            continue
        if entry is None:
            entry = indent
        match = _ENTRY_RE.fullmatch(text)
        if indent == entry and match:
            current = found[match["name"]] = []
            if match["text"].strip():
                current.append(match["text"].strip())
        elif indent > entry and current is not None:
            current.append(text)
    return {name: " ".join(parts) for name, parts in found.items() if parts}
