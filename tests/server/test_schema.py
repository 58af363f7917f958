import dataclasses
import datetime
import enum
import functools
import math
from collections.abc import Mapping, Sequence
from typing import (
    Annotated,
    Any,
    Generic,
    Literal,
    Never,
    NewType,
    NoReturn,
    NotRequired,
    Optional,
    Required,
    TypedDict,
    TypeVar,
    Union,
)

import attrs
import jsonschema
import orjson
import pytest

from mcpactor._exceptions import SchemaError
from mcpactor.server._schema import FunctionSchema, describe_function

# --- models shared by the tests ----------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@attrs.frozen
class Point:
    """A point on the plane.

    More detail that stays out of the schema.
    """

    x: int
    y: int = 0


@attrs.define
class Shape:
    name: Annotated[str, "what to call it"]
    points: list[Point]
    color: Color = Color.RED
    tags: list[str] = attrs.field(factory=list)
    _secret: str = "s"
    computed: int = attrs.field(init=False, default=0)
    note: str | None = attrs.field(default=None, metadata={"description": "a remark"})


@dataclasses.dataclass
class Item:
    sku: str
    quantity: int = 1
    labels: set[str] = dataclasses.field(default_factory=set)
    level: Level = Level.LOW
    derived: int = dataclasses.field(init=False, default=0)


@dataclasses.dataclass
class Order:
    items: list[Item]
    at: Point | None = None


class Meta(TypedDict, total=False):
    source: Required[str]
    color: Color
    count: int


class Strict(TypedDict):
    name: str
    extra: NotRequired[int]


@dataclasses.dataclass
class Tree:
    value: int
    children: "list[Tree]" = dataclasses.field(default_factory=list)


@attrs.frozen
class Expr:
    op: Literal["+", "*"]
    left: "Expr | int | Color"
    right: "Expr | int | Color"


@attrs.frozen
class Ping:
    pong: "Pong | None" = None


@attrs.frozen
class Pong:
    ping: Ping


@dataclasses.dataclass
class Twin:
    twin: "Twin | None" = None


@dataclasses.dataclass
class Twin2:
    twin: "Twin2 | None" = None


Twin2.__name__ = "Twin"  # two different recursive models with the same name


class Context:
    pass


class RequestContext(Context):
    pass


T = TypeVar("T")


class GenericContext(Generic[T]):
    pass


class TextContent:
    pass


class CallResult:
    pass


def check(schema: dict[str, Any] | None, *instances: Any) -> None:
    """Assert ``schema`` is valid 2020-12, JSON-serialisable, and accepts ``instances``."""
    assert schema is not None
    jsonschema.Draft202012Validator.check_schema(schema)
    orjson.dumps(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for instance in instances:
        validator.validate(instance)


def rejects(schema: dict[str, Any] | None, instance: Any) -> bool:
    assert schema is not None
    return not jsonschema.Draft202012Validator(schema).is_valid(instance)


def param(fn: Any, name: str, **kwargs: Any) -> dict[str, Any]:
    """The schema of one parameter."""
    schema = describe_function(fn, **kwargs).input_schema
    check(schema)
    result: dict[str, Any] = schema["properties"][name]
    return result


# --- scalars -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (None, {"type": "null"}),
        (type(None), {"type": "null"}),
        (Any, {}),
        (NewType("UserId", str), {"type": "string"}),
    ],
)
def test_scalar_schema(annotation: Any, expected: dict[str, Any]) -> None:
    def fn(x):  # type: ignore[no-untyped-def]
        pass

    fn.__annotations__ = {"x": annotation}
    assert param(fn, "x") == expected


def test_unannotated_parameter_is_any() -> None:
    def fn(x, y=3):  # type: ignore[no-untyped-def]
        pass

    schema = describe_function(fn).input_schema
    assert schema["properties"] == {"x": {}, "y": {"default": 3}}
    assert schema["required"] == ["x"]


def test_input_schema_root() -> None:
    def fn(a: int, b: str = "x") -> None:
        pass

    schema = describe_function(fn).input_schema
    assert schema == {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string", "default": "x"}},
        "required": ["a"],
        "additionalProperties": False,
    }
    check(schema, {"a": 1}, {"a": 1, "b": "y"})
    assert rejects(schema, {"b": "y"})
    assert rejects(schema, {"a": 1, "c": 2})
    assert rejects(schema, {"a": "1"})


def test_no_parameters() -> None:
    def fn() -> None:
        pass

    schema = describe_function(fn).input_schema
    assert schema == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }
    check(schema, {})


# --- containers --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (list[int], {"type": "array", "items": {"type": "integer"}}),
        (list, {"type": "array"}),
        (list[Any], {"type": "array"}),
        (Sequence[str], {"type": "array", "items": {"type": "string"}}),
        (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
        (tuple, {"type": "array"}),
        (
            tuple[int, str],
            {
                "type": "array",
                "prefixItems": [{"type": "integer"}, {"type": "string"}],
                "items": False,
                "minItems": 2,
                "maxItems": 2,
            },
        ),
        (set[str], {"type": "array", "items": {"type": "string"}, "uniqueItems": True}),
        (frozenset[int], {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}),
        (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
        (dict[str, Any], {"type": "object"}),
        (dict, {"type": "object"}),
        (Mapping[str, float], {"type": "object", "additionalProperties": {"type": "number"}}),
        (
            list[list[float]],
            {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
        ),
    ],
)
def test_container_schema(annotation: Any, expected: dict[str, Any]) -> None:
    def fn(x):  # type: ignore[no-untyped-def]
        pass

    fn.__annotations__ = {"x": annotation}
    assert param(fn, "x") == expected


def test_fixed_tuple_validates_length_and_types() -> None:
    def fn(pair: tuple[int, str]) -> None:
        pass

    schema = describe_function(fn).input_schema
    check(schema, {"pair": [1, "a"]})
    assert rejects(schema, {"pair": [1]})
    assert rejects(schema, {"pair": [1, "a", 2]})
    assert rejects(schema, {"pair": ["a", 1]})


def test_set_rejects_duplicates() -> None:
    def fn(tags: set[str]) -> None:
        pass

    schema = describe_function(fn).input_schema
    check(schema, {"tags": ["a", "b"]})
    assert rejects(schema, {"tags": ["a", "a"]})


# --- unions, literals, enums -------------------------------------------------------


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (Optional[int], {"type": ["integer", "null"]}),  # noqa: UP045
        (int | None, {"type": ["integer", "null"]}),
        (Union[int, str, None], {"type": ["integer", "string", "null"]}),  # noqa: UP007
        (
            list[int] | None,
            {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]},
        ),
        (
            Point | int,
            {
                "anyOf": [
                    {
                        "type": "object",
                        "title": "Point",
                        "description": "A point on the plane.",
                        "properties": {
                            "x": {"type": "integer"},
                            "y": {"type": "integer", "default": 0},
                        },
                        "required": ["x"],
                        "additionalProperties": False,
                    },
                    {"type": "integer"},
                ]
            },
        ),
    ],
)
def test_union_schema(annotation: Any, expected: dict[str, Any]) -> None:
    def fn(x):  # type: ignore[no-untyped-def]
        pass

    fn.__annotations__ = {"x": annotation}
    assert param(fn, "x") == expected


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
        (Literal[1, 2], {"type": "integer", "enum": [1, 2]}),
        (Literal["a", 1, None], {"type": ["string", "integer", "null"], "enum": ["a", 1, None]}),
        (Literal[True], {"type": "boolean", "enum": [True]}),
        (Literal[1.5, 2], {"type": ["number", "integer"], "enum": [1.5, 2]}),
        (Literal[Color.RED, "other"], {"type": "string", "enum": ["red", "other"]}),
    ],
)
def test_literal_schema(annotation: Any, expected: dict[str, Any]) -> None:
    def fn(x):  # type: ignore[no-untyped-def]
        pass

    fn.__annotations__ = {"x": annotation}
    assert param(fn, "x") == expected


def test_literal_validates_values() -> None:
    def fn(mode: Literal["fast", "slow"]) -> None:
        pass

    schema = describe_function(fn).input_schema
    check(schema, {"mode": "fast"})
    assert rejects(schema, {"mode": "medium"})


def test_enum_schema() -> None:
    def fn(color: Color, level: Level) -> None:
        pass

    schema = describe_function(fn).input_schema
    assert schema["properties"] == {
        "color": {"type": "string", "enum": ["red", "green"], "title": "Color"},
        "level": {"type": "integer", "enum": [1, 2], "title": "Level"},
    }
    check(schema, {"color": "red", "level": 2})
    assert rejects(schema, {"color": "blue", "level": 2})
    assert rejects(schema, {"color": "red", "level": 3})


def test_enum_of_mixed_values() -> None:
    class Mixed(enum.Enum):
        A = "a"
        B = 2

    def fn(m: Mixed) -> None:
        pass

    assert param(fn, "m") == {"type": ["string", "integer"], "enum": ["a", 2], "title": "Mixed"}


# --- models ------------------------------------------------------------------------


def test_attrs_class_schema() -> None:
    def fn(shape: Shape) -> None:
        pass

    assert param(fn, "shape") == {
        "type": "object",
        "title": "Shape",
        "properties": {
            "name": {"type": "string", "description": "what to call it"},
            "points": {
                "type": "array",
                "items": {
                    "type": "object",
                    "title": "Point",
                    "description": "A point on the plane.",
                    "properties": {
                        "x": {"type": "integer"},
                        "y": {"type": "integer", "default": 0},
                    },
                    "required": ["x"],
                    "additionalProperties": False,
                },
            },
            "color": {
                "type": "string",
                "enum": ["red", "green"],
                "title": "Color",
                "default": "red",
            },
            # A factory is not called to show a default, and makes the field optional.
            "tags": {"type": "array", "items": {"type": "string"}},
            # The __init__ keyword of a private attribute, not the attribute's name.
            "secret": {"type": "string", "default": "s"},
            "note": {"type": ["string", "null"], "description": "a remark", "default": None},
        },
        "required": ["name", "points"],
        "additionalProperties": False,
    }


def test_dataclass_schema() -> None:
    def fn(item: Item) -> None:
        pass

    schema = describe_function(fn).input_schema
    assert schema["properties"]["item"] == {
        "type": "object",
        "title": "Item",  # no description: dataclasses' generated docstring is not one
        "properties": {
            "sku": {"type": "string"},
            "quantity": {"type": "integer", "default": 1},
            "labels": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "level": {"type": "integer", "enum": [1, 2], "title": "Level", "default": 1},
        },
        "required": ["sku"],
        "additionalProperties": False,
    }
    check(schema, {"item": {"sku": "a"}}, {"item": {"sku": "a", "labels": ["x"], "level": 2}})
    assert rejects(schema, {"item": {"quantity": 2}})
    assert rejects(schema, {"item": {"sku": "a", "derived": 1}})


def test_typeddict_schema() -> None:
    def fn(meta: Meta, strict: Strict) -> None:
        pass

    schema = describe_function(fn).input_schema
    color = {"type": "string", "enum": ["red", "green"], "title": "Color"}
    assert schema["properties"] == {
        "meta": {
            "type": "object",
            "title": "Meta",
            "properties": {
                "source": {"type": "string"},
                "color": color,
                "count": {"type": "integer"},
            },
            "required": ["source"],
        },
        "strict": {
            "type": "object",
            "title": "Strict",
            "properties": {"name": {"type": "string"}, "extra": {"type": "integer"}},
            "required": ["name"],
        },
    }
    # TypedDicts are open: other keys are allowed.
    check(schema, {"meta": {"source": "a", "other": 1}, "strict": {"name": "n"}})
    assert rejects(schema, {"meta": {"color": "red"}, "strict": {"name": "n"}})


def test_typeddict_string_annotations() -> None:
    # As under `from __future__ import annotations`: on Python 3.11, __required_keys__
    # misses Required/NotRequired written as strings.
    class Lazy(TypedDict, total=False):
        must: "Required[int]"
        may: "str"

    class LazyTotal(TypedDict):
        must: "int"
        may: "NotRequired[Annotated[str, 'maybe']]"

    def fn(a: Lazy, b: LazyTotal) -> None:
        pass

    schema = describe_function(fn).input_schema
    assert schema["properties"]["a"]["required"] == ["must"]
    assert schema["properties"]["b"]["required"] == ["must"]
    assert schema["properties"]["b"]["properties"]["may"] == {
        "type": "string",
        "description": "maybe",
    }


def test_model_reused_in_two_places_is_inlined_twice() -> None:
    def fn(a: Point, b: list[Point]) -> None:
        pass

    schema = describe_function(fn).input_schema
    assert "$defs" not in schema
    assert schema["properties"]["a"] == schema["properties"]["b"]["items"]
    assert schema["properties"]["a"] is not schema["properties"]["b"]["items"]
    check(schema, {"a": {"x": 1}, "b": [{"x": 2, "y": 3}]})


# --- recursion ---------------------------------------------------------------------


def test_recursive_model_goes_to_defs() -> None:
    def fn(tree: Tree) -> None:
        pass

    schema = describe_function(fn).input_schema
    assert schema["properties"]["tree"] == {"$ref": "#/$defs/Tree"}
    assert schema["$defs"] == {
        "Tree": {
            "type": "object",
            "title": "Tree",
            "properties": {
                "value": {"type": "integer"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}},
            },
            "required": ["value"],
            "additionalProperties": False,
        }
    }
    tree = {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]}
    check(schema, {"tree": tree})
    assert rejects(schema, {"tree": {"value": 1, "children": [{"children": []}]}})


def test_recursive_model_binds() -> None:
    def fn(tree: Tree, trees: list[Tree] | None = None) -> None:
        pass

    described = describe_function(fn)
    arguments = {"tree": {"value": 1, "children": [{"value": 2}]}, "trees": [{"value": 3}]}
    check(described.input_schema, arguments)
    assert described.bind(arguments) == {
        "tree": Tree(1, [Tree(2)]),
        "trees": [Tree(3)],
    }


def test_recursive_model_inside_a_union() -> None:
    def fn(expr: Expr) -> Expr:
        raise NotImplementedError

    described = describe_function(fn)
    arguments = {
        "expr": {"op": "+", "left": 1, "right": {"op": "*", "left": "red", "right": 3}},
    }
    check(described.input_schema, arguments)
    expr = Expr("+", 1, Expr("*", Color.RED, 3))
    assert described.bind(arguments) == {"expr": expr}
    assert described.structure_output(expr) == arguments["expr"]
    check(described.output_schema, arguments["expr"])


def test_mutually_recursive_models() -> None:
    def fn(ping: Ping) -> Pong:
        raise NotImplementedError

    described = describe_function(fn)
    schema = described.input_schema
    # Only the model that is re-entered goes to $defs; Pong is inlined inside it.
    assert schema["properties"]["ping"] == {"$ref": "#/$defs/Ping"}
    assert list(schema["$defs"]) == ["Ping"]
    arguments = {"ping": {"pong": {"ping": {"pong": None}}}}
    check(schema, arguments)
    assert described.bind(arguments) == {"ping": Ping(Pong(Ping(None)))}
    check(described.output_schema, described.structure_output(Pong(Ping(Pong(Ping())))))
    assert described.structure_output(Pong(Ping(Pong(Ping())))) == {
        "ping": {"pong": {"ping": {"pong": None}}}
    }


def test_recursive_models_with_the_same_name_get_distinct_defs() -> None:
    def fn(a: Twin, b: Twin2) -> None:
        pass

    schema = describe_function(fn).input_schema
    assert schema["properties"]["a"] == {"$ref": "#/$defs/Twin"}
    assert schema["properties"]["b"] == {"$ref": "#/$defs/Twin2"}
    assert sorted(schema["$defs"]) == ["Twin", "Twin2"]
    check(schema, {"a": {"twin": {"twin": None}}, "b": {"twin": None}})


def test_recursive_output_model_has_object_root() -> None:
    def fn() -> Tree:
        raise NotImplementedError

    described = describe_function(fn)
    assert described.wraps_output is False
    assert described.output_schema is not None
    assert described.output_schema["type"] == "object"
    assert described.output_schema["$ref"] == "#/$defs/Tree"
    value = described.structure_output(Tree(1, [Tree(2)]))
    assert value == {"value": 1, "children": [{"value": 2, "children": []}]}
    check(described.output_schema, value)


# --- descriptions ------------------------------------------------------------------


def test_annotated_description() -> None:
    def fn(
        city: Annotated[str, "the city"],
        days: Annotated[int, {"not": "a description"}, "how many days"] = 3,
        raw: Annotated[int, 42] = 1,
    ) -> None:
        pass

    schema = describe_function(fn).input_schema
    assert schema["properties"] == {
        "city": {"type": "string", "description": "the city"},
        "days": {"type": "integer", "description": "how many days", "default": 3},
        "raw": {"type": "integer", "default": 1},
    }


def test_nested_annotated_description() -> None:
    def fn(xs: list[Annotated[int, "one value"]]) -> None:
        pass

    assert param(fn, "xs") == {
        "type": "array",
        "items": {"type": "integer", "description": "one value"},
    }


def test_annotated_without_a_string_adds_no_description() -> None:
    def fn(xs: list[Annotated[int, 42]]) -> None:
        pass

    assert param(fn, "xs") == {"type": "array", "items": {"type": "integer"}}


def test_docstring_args() -> None:
    def fn(
        city: str, days: int, units: Annotated[str, "from Annotated"] = "c", note: str = ""
    ) -> None:
        """Forecast the weather.

        Args:
            city (str): The city to look up,
                for example Paris.
            days: How many days.
            units: From the docstring.
            missing: Not a parameter.

        Returns:
            note: the Args section has ended, so this is not the parameter's.
        """

    schema = describe_function(fn).input_schema
    assert schema["properties"] == {
        "city": {"type": "string", "description": "The city to look up, for example Paris."},
        "days": {"type": "integer", "description": "How many days."},
        "units": {"type": "string", "description": "from Annotated", "default": "c"},
        "note": {"type": "string", "default": ""},
    }


def test_docstring_without_args_section() -> None:
    def fn(city: str) -> None:
        """Forecast the weather.

        city: not in an Args section.
        """

    assert param(fn, "city") == {"type": "string"}


def test_parameter_description_overrides_model_docstring() -> None:
    def fn(a: Point, b: Annotated[Point, "where to start"]) -> None:
        pass

    schema = describe_function(fn).input_schema
    assert schema["properties"]["a"]["description"] == "A point on the plane."
    assert schema["properties"]["b"]["description"] == "where to start"


# --- defaults ----------------------------------------------------------------------


def test_defaults() -> None:
    def fn(
        a: int = 1,
        b: str | None = None,
        c: Color = Color.GREEN,
        d: tuple[int, ...] = (1, 2),
        e: Point = Point(1, 2),
        f: float = math.nan,
        g: Any = datetime.date(2024, 1, 1),
        h: list[Level] = [Level.HIGH],  # noqa: B006
        i: tuple[Color, int] = (Color.RED,),  # type: ignore[assignment]
    ) -> None:
        pass

    schema = describe_function(fn).input_schema
    defaults = {name: prop.get("default", "<none>") for name, prop in schema["properties"].items()}
    assert defaults == {
        "a": 1,
        "b": None,
        "c": "green",
        "d": [1, 2],
        "e": {"x": 1, "y": 2},
        "f": "<none>",  # NaN is not JSON
        "g": "<none>",  # neither is a date
        "h": [2],
        "i": "<none>",  # does not fit its annotation
    }
    assert schema["required"] == []
    check(schema, {})


# --- context -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "annotation",
    [Context, RequestContext, Context | None, Annotated[Context, "ctx"], GenericContext[int]],
)
def test_context_parameter_is_excluded(annotation: Any) -> None:
    def fn(query: str, ctx):  # type: ignore[no-untyped-def]
        pass

    fn.__annotations__ = {"query": str, "ctx": annotation}
    described = describe_function(fn, context_types=(Context, GenericContext))
    assert described.context_param == "ctx"
    assert described.input_schema["properties"] == {"query": {"type": "string"}}
    assert described.input_schema["required"] == ["query"]
    assert described.bind({"query": "q"}) == {"query": "q"}


def test_without_context_types_there_is_no_context_param() -> None:
    def fn(query: str) -> None:
        pass

    assert describe_function(fn, context_types=(Context,)).context_param is None
    assert describe_function(fn).context_param is None


def test_context_type_unknown_to_describe_function_is_an_error() -> None:
    def fn(ctx: Context) -> None:
        pass

    with pytest.raises(SchemaError, match=r"parameter 'ctx': cannot describe Context"):
        describe_function(fn)


def test_union_of_context_and_another_type_is_not_the_context() -> None:
    def fn(ctx: Context | int) -> None:
        pass

    with pytest.raises(SchemaError, match=r"parameter 'ctx': cannot describe Context"):
        describe_function(fn, context_types=(Context,))


def test_two_context_parameters_are_an_error() -> None:
    def fn(a: Context, b: RequestContext) -> None:
        pass

    with pytest.raises(SchemaError, match=r"parameters 'a' and 'b' both take the context"):
        describe_function(fn, context_types=(Context,))


# --- errors ------------------------------------------------------------------------


def test_var_positional_is_an_error() -> None:
    def tool(a: int, *rest: int) -> None:
        pass

    with pytest.raises(SchemaError, match=r"tool: parameter \*rest cannot be described"):
        describe_function(tool)


def test_var_keyword_is_an_error() -> None:
    def tool(**options: str) -> None:
        pass

    with pytest.raises(SchemaError, match=r"tool: parameter \*\*options cannot be described"):
        describe_function(tool)


def test_positional_only_is_an_error() -> None:
    def tool(a: int, /, b: int) -> None:
        pass

    with pytest.raises(SchemaError, match=r"parameter 'a' is positional-only"):
        describe_function(tool)


@pytest.mark.parametrize("annotation", [bytes, bytearray, list[bytes], bytes | None])
def test_bytes_parameter_is_an_error(annotation: Any) -> None:
    def tool(data):  # type: ignore[no-untyped-def]
        pass

    tool.__annotations__ = {"data": annotation}
    with pytest.raises(SchemaError, match=r"parameter 'data': \w+ cannot travel in JSON"):
        describe_function(tool)


def test_error_in_nested_model_names_the_path() -> None:
    @dataclasses.dataclass
    class Blob:
        payload: bytes

    @dataclasses.dataclass
    class Upload:
        blobs: list[Blob]

    def tool(upload: Upload) -> None:
        pass

    with pytest.raises(SchemaError) as info:
        describe_function(tool)
    assert str(info.value) == (
        "test_error_in_nested_model_names_the_path.<locals>.tool: parameter 'upload': "
        "field 'blobs' of test_error_in_nested_model_names_the_path.<locals>.Upload: "
        "field 'payload' of test_error_in_nested_model_names_the_path.<locals>.Blob: "
        "bytes cannot travel in JSON; take a str (base64, for example) and decode it "
        "in the handler"
    )


@pytest.mark.parametrize(
    ("annotation", "message"),
    [
        (datetime.datetime, r"cannot describe datetime; expected str, int"),
        (dict[int, str], r"JSON object keys are strings; expected dict\[str, \.\.\.\]"),
        (T, r"cannot describe ~T"),
        (Literal[b"x"], r"Literal value b'x' is not a JSON scalar"),
        (Required[int], r"only allowed on a TypedDict key"),
    ],
)
def test_unsupported_annotation_is_an_error(annotation: Any, message: str) -> None:
    def tool(x):  # type: ignore[no-untyped-def]
        pass

    tool.__annotations__ = {"x": annotation}
    with pytest.raises(SchemaError, match=message):
        describe_function(tool)


def test_unresolvable_annotation_is_an_error() -> None:
    def tool(x: "Missing") -> None:  # type: ignore[name-defined]  # noqa: F821
        pass

    with pytest.raises(SchemaError, match=r"cannot resolve the annotations of .*tool:.*Missing"):
        describe_function(tool)


def test_unreadable_signature_is_an_error() -> None:
    def tool(a: int) -> None:
        pass

    tool.__signature__ = "not a signature"  # type: ignore[attr-defined]
    with pytest.raises(SchemaError, match=r"cannot read the signature of .*tool"):
        describe_function(tool)


def test_enum_without_members_is_an_error() -> None:
    class Empty(enum.Enum):
        pass

    def tool(x: Empty) -> None:
        pass

    with pytest.raises(SchemaError, match=r"enum .*Empty has no members"):
        describe_function(tool)


def test_enum_with_non_json_values_is_an_error() -> None:
    class Pairs(enum.Enum):
        A = (1, 2)

    def tool(x: Pairs) -> None:
        pass

    with pytest.raises(SchemaError, match=r"Pairs.A = \(1, 2\) is not a JSON scalar"):
        describe_function(tool)


def test_initvar_is_an_error() -> None:
    @dataclasses.dataclass
    class WithInit:
        seed: dataclasses.InitVar[int]

    def tool(x: WithInit) -> None:
        pass

    with pytest.raises(SchemaError, match=r"WithInit.seed is an InitVar"):
        describe_function(tool)


def test_bytes_return_is_an_error() -> None:
    def tool() -> bytes:
        raise NotImplementedError

    with pytest.raises(SchemaError, match=r"tool: return annotation: bytes cannot travel"):
        describe_function(tool)


# --- output ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "annotation", [None, type(None), Any, Annotated[Any, "anything"], NoReturn, Never]
)
def test_no_output_schema(annotation: Any) -> None:
    def tool():  # type: ignore[no-untyped-def]
        pass

    tool.__annotations__ = {"return": annotation}
    described = describe_function(tool)
    assert described.output_schema is None
    assert described.wraps_output is False
    assert described.structure_output({"a": (1,)}) == {"a": (1,)}


def test_no_return_annotation_means_no_output_schema() -> None:
    def tool(x: int):  # type: ignore[no-untyped-def]
        pass

    assert describe_function(tool).output_schema is None


@pytest.mark.parametrize(
    "annotation",
    [
        TextContent,
        list[TextContent],
        TextContent | CallResult,
        CallResult,
        Sequence[TextContent | Point],
        Annotated[TextContent, "text"],
    ],
)
def test_skip_output_types(annotation: Any) -> None:
    def tool():  # type: ignore[no-untyped-def]
        pass

    tool.__annotations__ = {"return": annotation}
    described = describe_function(tool, skip_output_types=(TextContent, CallResult))
    assert described.output_schema is None
    assert described.wraps_output is False


def test_literal_of_skipped_type_name_is_not_skipped() -> None:
    def tool() -> Literal["TextContent"]:
        raise NotImplementedError

    described = describe_function(tool, skip_output_types=(TextContent,))
    assert described.output_schema is not None


@pytest.mark.parametrize(
    ("annotation", "value", "expected"),
    [
        (Point, Point(1, 2), {"x": 1, "y": 2}),
        (Item, Item("a", labels={"x"}), {"sku": "a", "quantity": 1, "labels": ["x"], "level": 1}),
        (Meta, {"source": "s", "color": Color.RED}, {"source": "s", "color": "red"}),
        (dict[str, int], {"a": 1}, {"a": 1}),
        (dict[str, Point], {"a": Point(1)}, {"a": {"x": 1, "y": 0}}),
        (Annotated[Point, "the point"], Point(3), {"x": 3, "y": 0}),
    ],
)
def test_object_output_is_not_wrapped(annotation: Any, value: Any, expected: Any) -> None:
    def tool():  # type: ignore[no-untyped-def]
        pass

    tool.__annotations__ = {"return": annotation}
    described = describe_function(tool)
    assert described.wraps_output is False
    assert described.output_schema is not None
    assert described.output_schema["type"] == "object"
    assert "result" not in described.output_schema.get("properties", {})
    structured = described.structure_output(value)
    assert structured == expected
    check(described.output_schema, structured)


@pytest.mark.parametrize(
    ("annotation", "value", "result"),
    [
        (str, "hi", "hi"),
        (int, 3, 3),
        (list[int], [1, 2], [1, 2]),
        (tuple[int, str], (1, "a"), [1, "a"]),
        (set[Color], {Color.RED}, ["red"]),
        (Literal["a", "b"], "a", "a"),
        (Color, Color.GREEN, "green"),
        (Point | None, None, None),
        (Point | None, Point(1), {"x": 1, "y": 0}),
        (list[Point], (Point(1), Point(2, 3)), [{"x": 1, "y": 0}, {"x": 2, "y": 3}]),
        (Point | Item, Item("z"), {"sku": "z", "quantity": 1, "labels": [], "level": 1}),
        (Color | int, Color.RED, "red"),
        (Annotated[int, "the sum"], 5, 5),
    ],
)
def test_other_output_is_wrapped(annotation: Any, value: Any, result: Any) -> None:
    def tool():  # type: ignore[no-untyped-def]
        pass

    tool.__annotations__ = {"return": annotation}
    described = describe_function(tool)
    assert described.wraps_output is True
    assert described.output_schema is not None
    assert described.output_schema["type"] == "object"
    assert described.output_schema["required"] == ["result"]
    structured = described.structure_output(value)
    assert structured == {"result": result}
    check(described.output_schema, structured)


def test_wrapped_output_schema() -> None:
    def tool() -> Annotated[int, "the sum"]:
        raise NotImplementedError

    assert describe_function(tool).output_schema == {
        "type": "object",
        "properties": {"result": {"type": "integer", "description": "the sum"}},
        "required": ["result"],
        "x-mcpactor-wrap-result": True,
    }


def test_object_output_schema() -> None:
    def tool() -> Point:
        raise NotImplementedError

    assert describe_function(tool).output_schema == {
        "type": "object",
        "title": "Point",
        "description": "A point on the plane.",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer", "default": 0}},
        "required": ["x"],
        "additionalProperties": False,
    }


def test_structure_output_nested() -> None:
    def tool() -> Order:
        raise NotImplementedError

    described = describe_function(tool)
    order = Order([Item("a", 2, {"l"}, Level.HIGH)], at=Point(1, 1))
    structured = described.structure_output(order)
    assert structured == {
        "items": [{"sku": "a", "quantity": 2, "labels": ["l"], "level": 2}],
        "at": {"x": 1, "y": 1},
    }
    check(described.output_schema, structured)
    assert orjson.loads(orjson.dumps(structured)) == structured


def test_structure_output_accepts_a_dict_for_a_model() -> None:
    def tool() -> Shape:
        raise NotImplementedError

    described = describe_function(tool)
    value = {"name": "n", "points": (Point(1),), "color": Color.GREEN}
    assert described.structure_output(value) == {
        "name": "n",
        "points": [{"x": 1, "y": 0}],
        "color": "green",
    }


def test_structure_output_uses_init_keywords_of_attrs() -> None:
    def tool() -> Shape:
        raise NotImplementedError

    described = describe_function(tool)
    structured = described.structure_output(Shape("n", [Point(1)], secret="x"))
    assert structured == {
        "name": "n",
        "points": [{"x": 1, "y": 0}],
        "color": "red",
        "tags": [],
        "secret": "x",
        "note": None,
    }
    check(described.output_schema, structured)


# --- bind --------------------------------------------------------------------------


def test_bind_plain_values_pass_through_untouched() -> None:
    def tool(
        s: str,
        n: int,
        f: float,
        b: bool,
        a: Any,
        d: dict[str, Any],
        xs: list[int],
        o: int | None,
        lit: Literal["a"],
        meta: Strict,
    ) -> None:
        pass

    described = describe_function(tool)
    arguments = {
        "s": "x",
        "n": 1,
        "f": 1.5,
        "b": True,
        "a": [1],
        "d": {"k": [1]},
        "xs": [1, 2],
        "o": None,
        "lit": "a",
        "meta": {"name": "n"},
    }
    check(described.input_schema, arguments)
    bound = described.bind(arguments)
    assert bound == arguments
    assert all(bound[name] is arguments[name] for name in arguments)


def test_bind_attrs_class() -> None:
    def tool(shape: Shape) -> None:
        pass

    described = describe_function(tool)
    arguments = {
        "shape": {"name": "tri", "points": [{"x": 1}, {"x": 2, "y": 3}], "secret": "k"},
    }
    check(described.input_schema, arguments)
    bound = described.bind(arguments)
    assert bound == {"shape": Shape("tri", [Point(1), Point(2, 3)], secret="k")}
    assert bound["shape"].color is Color.RED


def test_bind_dataclass() -> None:
    def tool(order: Order) -> None:
        pass

    described = describe_function(tool)
    arguments = {
        "order": {"items": [{"sku": "a", "labels": ["x", "y"], "level": 2}], "at": {"x": 5}},
    }
    check(described.input_schema, arguments)
    bound = described.bind(arguments)
    assert bound == {"order": Order([Item("a", 1, {"x", "y"}, Level.HIGH)], Point(5))}
    assert bound["order"].items[0].level is Level.HIGH
    assert isinstance(bound["order"].items[0].labels, set)


def test_bind_enum_and_literal_enum() -> None:
    def tool(color: Color, level: Level, pick: Literal[Color.GREEN, "none"]) -> None:
        pass

    described = describe_function(tool)
    arguments = {"color": "green", "level": 2, "pick": "green"}
    check(described.input_schema, arguments)
    bound = described.bind(arguments)
    assert bound == {"color": Color.GREEN, "level": Level.HIGH, "pick": Color.GREEN}
    assert described.bind({"color": "red", "level": 1, "pick": "none"})["pick"] == "none"


def test_bind_invalid_enum_value_raises() -> None:
    def tool(color: Color) -> None:
        pass

    with pytest.raises(ValueError, match=r"expected one of \['red', 'green'\] for .*Color"):
        describe_function(tool).bind({"color": "blue"})


def test_bind_nested_containers() -> None:
    def tool(
        grid: list[list[Point]],
        by_name: dict[str, Point],
        pair: tuple[Color, int],
        colors: tuple[Color, ...],
        unique: set[Color],
        frozen: frozenset[str],
        plain_tuple: tuple[int, ...],
    ) -> None:
        pass

    described = describe_function(tool)
    arguments = {
        "grid": [[{"x": 1}], [{"x": 2}, {"x": 3, "y": 4}]],
        "by_name": {"a": {"x": 9}},
        "pair": ["red", 1],
        "colors": ["red", "green"],
        "unique": ["green"],
        "frozen": ["a"],
        "plain_tuple": [1, 2],
    }
    check(described.input_schema, arguments)
    assert described.bind(arguments) == {
        "grid": [[Point(1)], [Point(2), Point(3, 4)]],
        "by_name": {"a": Point(9)},
        "pair": (Color.RED, 1),
        "colors": (Color.RED, Color.GREEN),
        "unique": {Color.GREEN},
        "frozen": frozenset({"a"}),
        "plain_tuple": (1, 2),
    }


def test_bind_typeddict_keeps_a_dict() -> None:
    def tool(meta: Meta) -> None:
        pass

    described = describe_function(tool)
    arguments = {"meta": {"source": "s", "color": "green", "other": 1}}
    check(described.input_schema, arguments)
    bound = described.bind(arguments)
    assert bound == {"meta": {"source": "s", "color": Color.GREEN, "other": 1}}
    assert type(bound["meta"]) is dict
    assert arguments["meta"]["color"] == "green"  # the input is not modified


def test_bind_optional_model() -> None:
    def tool(at: Point | None = None) -> None:
        pass

    described = describe_function(tool)
    assert described.bind({"at": None}) == {"at": None}
    assert described.bind({"at": {"x": 1}}) == {"at": Point(1)}
    assert described.bind({}) == {}


def test_bind_union_picks_the_member_that_fits() -> None:
    def tool(x: Point | Item | Color | int | list[Point]) -> None:
        pass

    described = describe_function(tool)
    for value, expected in [
        ({"x": 1}, Point(1)),
        ({"sku": "a"}, Item("a")),
        ("red", Color.RED),
        (7, 7),
        ([{"x": 2}], [Point(2)]),
    ]:
        check(described.input_schema, {"x": value})
        assert described.bind({"x": value}) == {"x": expected}


def test_bind_union_of_scalars_and_models() -> None:
    def tool(x: Point | bool | int | float | str | dict[str, Any] | Color | None) -> None:
        pass

    described = describe_function(tool)
    for value, expected in [
        ({"x": 1}, Point(1)),
        ({"y": 1}, {"y": 1}),  # not a Point: no "x"
        ({"x": 1, "z": 2}, {"x": 1, "z": 2}),  # not a Point: "z" is unknown
        (True, True),
        (2, 2),
        (2.0, 2.0),
        (2.5, 2.5),
        ("red", "red"),  # str comes before Color
        (None, None),
    ]:
        check(described.input_schema, {"x": value})
        bound = described.bind({"x": value})
        assert bound == {"x": expected}
        assert type(bound["x"]) is type(expected)


def test_bind_union_order_decides() -> None:
    def tool(x: Color | Any) -> None:
        pass

    described = describe_function(tool)
    assert described.bind({"x": "red"}) == {"x": Color.RED}
    assert described.bind({"x": "blue"}) == {"x": "blue"}
    assert described.bind({"x": ["red"]}) == {"x": ["red"]}


def test_bind_union_member_nested_in_annotated() -> None:
    def tool(x: Annotated[Point | None, "maybe a point"] | Color) -> None:
        pass

    described = describe_function(tool)
    assert described.input_schema["properties"]["x"]["anyOf"][0]["description"] == (
        "maybe a point"
    )
    assert described.bind({"x": {"x": 1}}) == {"x": Point(1)}
    assert described.bind({"x": None}) == {"x": None}
    assert described.bind({"x": "green"}) == {"x": Color.GREEN}


def test_bind_union_leaves_a_value_that_fits_no_member() -> None:
    # Arguments are validated first; bind does not second-guess what it cannot place.
    def tool(x: Point | Color) -> None:
        pass

    assert describe_function(tool).bind({"x": 5}) == {"x": 5}


def test_bind_union_of_typeddict_and_model() -> None:
    def tool(x: Strict | Point | None) -> None:
        pass

    described = describe_function(tool)
    assert described.bind({"x": {"x": 1, "y": 2}}) == {"x": Point(1, 2)}
    assert described.bind({"x": {"name": "n"}}) == {"x": {"name": "n"}}
    assert described.bind({"x": None}) == {"x": None}


def test_bind_leaves_out_missing_optional_and_unknown_arguments() -> None:
    def tool(a: int, color: Color = Color.RED, b: str = "x") -> None:
        pass

    described = describe_function(tool)
    assert described.bind({"a": 1, "unknown": 2}) == {"a": 1}


def test_bind_result_calls_the_function() -> None:
    def tool(shape: Shape, level: Level = Level.LOW, *, scale: float = 1.0) -> str:
        return f"{shape.name}:{len(shape.points)}:{level.name}:{scale}"

    described = describe_function(tool)
    kwargs = described.bind({"shape": {"name": "s", "points": [{"x": 1}]}, "scale": 2})
    assert tool(**kwargs) == "s:1:LOW:2"
    assert described.structure_output(tool(**kwargs)) == {"result": "s:1:LOW:2"}


# --- kinds of callables ------------------------------------------------------------


def test_async_function() -> None:
    async def tool(color: Color) -> list[Point]:
        raise NotImplementedError

    described = describe_function(tool)
    assert described.input_schema["properties"]["color"]["enum"] == ["red", "green"]
    assert described.wraps_output is True
    assert described.bind({"color": "red"}) == {"color": Color.RED}


def test_string_annotations() -> None:
    # What `from __future__ import annotations` produces.
    def tool(point: "Point", color: "Color | None" = None) -> "list[Point]":
        raise NotImplementedError

    described = describe_function(tool)
    assert described.input_schema["required"] == ["point"]
    assert described.input_schema["properties"]["color"]["default"] is None
    assert described.bind({"point": {"x": 1}, "color": "red"}) == {
        "point": Point(1),
        "color": Color.RED,
    }
    assert described.output_schema is not None
    assert described.output_schema["properties"]["result"]["type"] == "array"


def test_bound_method() -> None:
    class Tools:
        def tool(self, a: int, ctx: Context) -> Point:
            """Make a point.

            Args:
                a: the x.
            """
            raise NotImplementedError

    described = describe_function(Tools().tool, context_types=(Context,))
    assert described.input_schema["properties"] == {
        "a": {"type": "integer", "description": "the x."}
    }
    assert described.context_param == "ctx"
    assert described.wraps_output is False


def test_partial() -> None:
    def tool(prefix: str, point: Point) -> None:
        pass

    described = describe_function(functools.partial(tool, "p"))
    assert list(described.input_schema["properties"]) == ["point"]
    assert described.bind({"point": {"x": 1}}) == {"point": Point(1)}


def test_callable_instance() -> None:
    class Tool:
        def __call__(self, level: Level) -> None:
            pass

    described = describe_function(Tool())
    assert described.bind({"level": 1}) == {"level": Level.LOW}


def test_class() -> None:
    described = describe_function(Point)
    assert described.input_schema["required"] == ["x"]
    assert Point(**described.bind({"x": 1, "y": 2})) == Point(1, 2)


def test_wrapped_function() -> None:
    def tool(point: Point) -> None:
        pass

    @functools.wraps(tool)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        pass

    described = describe_function(wrapper)
    assert described.bind({"point": {"x": 1}}) == {"point": Point(1)}


# --- the schema object -------------------------------------------------------------


def test_schemas_are_independent_copies() -> None:
    def tool(a: Point, b: Point) -> Point:
        raise NotImplementedError

    first = describe_function(tool)
    first.input_schema["properties"]["a"]["properties"]["x"]["type"] = "string"
    assert first.input_schema["properties"]["b"]["properties"]["x"]["type"] == "integer"
    assert first.output_schema is not None
    assert first.output_schema["properties"]["x"]["type"] == "integer"
    second = describe_function(tool)
    assert second.input_schema["properties"]["a"]["properties"]["x"]["type"] == "integer"


def test_function_schema_equality_ignores_converters() -> None:
    def one(a: Point) -> None:
        pass

    def two(a: Point) -> None:
        pass

    assert describe_function(one) == describe_function(two)
    assert isinstance(describe_function(one), FunctionSchema)


def test_everything_at_once_is_valid_2020_12() -> None:
    def tool(
        a: int,
        b: Annotated[list[Point], "points"],
        c: dict[str, Item | None],
        d: tuple[Color, Literal[1, "x"]],
        e: Meta | Strict,
        f: Tree | None = None,
        g: set[Level] = {Level.LOW},  # noqa: B006
    ) -> dict[str, list[Order]]:
        raise NotImplementedError

    described = describe_function(tool)
    check(
        described.input_schema,
        {
            "a": 1,
            "b": [{"x": 1}],
            "c": {"k": None, "j": {"sku": "s"}},
            "d": ["red", "x"],
            "e": {"name": "n"},
            "f": {"value": 1, "children": []},
            "g": [1, 2],
        },
    )
    check(described.output_schema, {"k": [{"items": [], "at": None}]})
