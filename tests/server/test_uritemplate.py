import re
import time
from urllib.parse import quote

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpactor._exceptions import MCPActorError
from mcpactor.server._uritemplate import UriTemplate, UriTemplateError, is_uri_template

# The variables of RFC 6570 §3.2.1, without the list and map values (level 4).
RFC_VARIABLES: dict[str, str | None] = {
    "dub": "me/too",
    "hello": "Hello World!",
    "half": "50%",
    "var": "value",
    "who": "fred",
    "base": "http://example.com/home/",
    "path": "/foo/bar",
    "v": "6",
    "x": "1024",
    "y": "768",
    "empty": "",
    "undef": None,
}

# (template, expansion): every level 1–3 example of RFC 6570 §1.2 and §3.2.2–§3.2.9.
RFC_EXAMPLES = [
    # §1.2 level 1 and the level 2–3 examples not repeated in §3.2
    ("{var}", "value"),
    ("{hello}", "Hello%20World%21"),
    ("X{#var}", "X#value"),
    ("X{#hello}", "X#Hello%20World!"),
    ("map?{x,y}", "map?1024,768"),
    ("X{.x,y}", "X.1024.768"),
    # §3.2.2 simple string expansion
    ("{half}", "50%25"),
    ("O{empty}X", "OX"),
    ("O{undef}X", "OX"),
    ("{x,y}", "1024,768"),
    ("{x,hello,y}", "1024,Hello%20World%21,768"),
    ("?{x,empty}", "?1024,"),
    ("?{x,undef}", "?1024"),
    ("?{undef,y}", "?768"),
    # §3.2.3 reserved expansion
    ("{+var}", "value"),
    ("{+hello}", "Hello%20World!"),
    ("{+half}", "50%25"),
    ("{base}index", "http%3A%2F%2Fexample.com%2Fhome%2Findex"),
    ("{+base}index", "http://example.com/home/index"),
    ("O{+empty}X", "OX"),
    ("O{+undef}X", "OX"),
    ("{+path}/here", "/foo/bar/here"),
    ("here?ref={+path}", "here?ref=/foo/bar"),
    ("up{+path}{var}/here", "up/foo/barvalue/here"),
    ("{+x,hello,y}", "1024,Hello%20World!,768"),
    ("{+path,x}/here", "/foo/bar,1024/here"),
    # §3.2.4 fragment expansion
    ("{#var}", "#value"),
    ("{#hello}", "#Hello%20World!"),
    ("{#half}", "#50%25"),
    ("foo{#empty}", "foo#"),
    ("foo{#undef}", "foo"),
    ("{#x,hello,y}", "#1024,Hello%20World!,768"),
    ("{#path,x}/here", "#/foo/bar,1024/here"),
    # §3.2.5 label expansion with dot-prefix
    ("{.who}", ".fred"),
    ("{.who,who}", ".fred.fred"),
    ("{.half,who}", ".50%25.fred"),
    ("X{.var}", "X.value"),
    ("X{.empty}", "X."),
    ("X{.undef}", "X"),
    # §3.2.6 path segment expansion
    ("{/who}", "/fred"),
    ("{/who,who}", "/fred/fred"),
    ("{/half,who}", "/50%25/fred"),
    ("{/who,dub}", "/fred/me%2Ftoo"),
    ("{/var}", "/value"),
    ("{/var,empty}", "/value/"),
    ("{/var,undef}", "/value"),
    ("{/var,x}/here", "/value/1024/here"),
    # §3.2.7 path-style parameter expansion
    ("{;who}", ";who=fred"),
    ("{;half}", ";half=50%25"),
    ("{;empty}", ";empty"),
    ("{;v,empty,who}", ";v=6;empty;who=fred"),
    ("{;v,bar,who}", ";v=6;who=fred"),
    ("{;x,y}", ";x=1024;y=768"),
    ("{;x,y,empty}", ";x=1024;y=768;empty"),
    ("{;x,y,undef}", ";x=1024;y=768"),
    # §3.2.8 form-style query expansion
    ("{?who}", "?who=fred"),
    ("{?half}", "?half=50%25"),
    ("{?x,y}", "?x=1024&y=768"),
    ("{?x,y,empty}", "?x=1024&y=768&empty="),
    ("{?x,y,undef}", "?x=1024&y=768"),
    # §3.2.9 form-style query continuation
    ("{&who}", "&who=fred"),
    ("{&half}", "&half=50%25"),
    ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
    ("{&x,y,empty}", "&x=1024&y=768&empty="),
    ("{&x,y,undef}", "&x=1024&y=768"),
]

# RFC examples whose expansion cannot be read back unambiguously: an undefined
# positional variable leaves no trace, and two adjacent expressions have no boundary.
AMBIGUOUS_RFC_TEMPLATES = {"O{undef}X", "O{+undef}X", "?{undef,y}", "up{+path}{var}/here"}


@pytest.mark.parametrize(("template", "expected"), RFC_EXAMPLES)
def test_expand_rfc6570_examples(template: str, expected: str) -> None:
    assert UriTemplate.parse(template).expand(RFC_VARIABLES) == expected


@pytest.mark.parametrize(
    ("template", "uri"),
    [(t, uri) for t, uri in RFC_EXAMPLES if t not in AMBIGUOUS_RFC_TEMPLATES],
)
def test_match_reads_back_rfc6570_examples(template: str, uri: str) -> None:
    parsed = UriTemplate.parse(template)
    defined = {
        name: value for name in parsed.variables if (value := RFC_VARIABLES.get(name)) is not None
    }
    assert parsed.match(uri) == defined


def test_match_assigns_positional_values_left_to_right() -> None:
    # ?{undef,y} expands to "?768": nothing says the value was y's.
    assert UriTemplate.parse("?{undef,y}").match("?768") == {"undef": "768"}
    # An absent simple expression reads as its first variable being empty.
    assert UriTemplate.parse("O{undef}X").match("OX") == {"undef": ""}
    assert UriTemplate.parse("O{+undef}X").match("OX") == {"undef": ""}


def test_expand_treats_missing_and_none_alike() -> None:
    template = UriTemplate.parse("db://{table}/rows{?limit,offset}")
    assert template.expand({"table": "t", "limit": None}) == "db://t/rows"
    assert template.expand({"table": "t"}) == "db://t/rows"


def test_expand_formats_numbers() -> None:
    template = UriTemplate.parse("db://rows{?limit,ratio}")
    assert template.expand({"limit": 10, "ratio": 0.5}) == "db://rows?limit=10&ratio=0.5"


def test_expand_encodes_utf8() -> None:
    assert UriTemplate.parse("x://{a}").expand({"a": "é/€"}) == "x://%C3%A9%2F%E2%82%AC"
    assert UriTemplate.parse("x://{+a}").expand({"a": "é/€"}) == "x://%C3%A9/%E2%82%AC"


def test_expand_reserved_keeps_percent_triplets_only() -> None:
    template = UriTemplate.parse("x://{+a}")
    assert template.expand({"a": "a%20b"}) == "x://a%20b"
    assert template.expand({"a": "100%"}) == "x://100%25"
    assert template.expand({"a": "%zz"}) == "x://%25zz"
    assert UriTemplate.parse("x://{a}").expand({"a": "a%20b"}) == "x://a%2520b"


def test_expand_encodes_literals_that_are_not_uri_characters() -> None:
    template = UriTemplate.parse("file:///my docs/é/100%/{name}")
    assert template.expand({"name": "a"}) == "file:///my%20docs/%C3%A9/100%25/a"


def test_expand_rejects_composite_values() -> None:
    template = UriTemplate.parse("x://{a}")
    with pytest.raises(TypeError, match=r"'a' must be a str, int or float, got list.*level 4"):
        template.expand({"a": ["x", "y"]})  # type: ignore[dict-item]


def test_template_without_expressions() -> None:
    template = UriTemplate.parse("file:///etc/hosts")
    assert not template.is_template()
    assert template.variables == ()
    assert template.expand({"x": "1"}) == "file:///etc/hosts"
    assert template.match("file:///etc/hosts") == {}
    assert template.match("file:///etc/hostsx") is None


def test_variables_in_order_of_first_appearance() -> None:
    template = UriTemplate.parse("x://{b}/{a}{?c,b}{#d}")
    assert template.is_template()
    assert template.variables == ("b", "a", "c", "d")


def test_equality_and_hash_follow_the_template_text() -> None:
    one = UriTemplate.parse("x://{a}")
    assert one == UriTemplate.parse("x://{a}")
    assert hash(one) == hash(UriTemplate.parse("x://{a}"))
    assert one != UriTemplate.parse("x://{b}")
    assert repr(one) == "UriTemplate(template='x://{a}', variables=('a',))"
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        one.template = "y"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("file:///{path}", True),
        ("db://{table}/rows{?limit}", True),
        ("x://{}", True),
        ("file:///etc/hosts", False),
        ("x://{unclosed", False),
        ("x://}{", False),
    ],
)
def test_is_uri_template(text: str, expected: bool) -> None:
    assert is_uri_template(text) is expected


@pytest.mark.parametrize(
    ("template", "message", "position"),
    [
        ("file:///{path", r"'\{' is never closed by '\}'", 8),
        ("file:///path}", r"'\}' without a matching '\{'", 12),
        ("x://{a{b}}", r"'\{' inside the expression opened at offset 4", 6),
        ("x://{a{b", r"'\{' inside the expression opened at offset 4", 6),
        ("x://{}", r"empty expression", 4),
        ("x://{=a}", r"operator '=' is reserved", 5),
        ("x://{|a}", r"operator '\|' is reserved", 5),
        ("x://{list*}", r"explode modifier in 'list\*' is RFC 6570 level 4", 5),
        ("x://{?a,list*}", r"explode modifier in 'list\*' is RFC 6570 level 4", 8),
        ("x://{var:3}", r"prefix modifier in 'var:3' is RFC 6570 level 4", 5),
        ("x://{a-b}", r"invalid variable name 'a-b'", 5),
        ("x://{a..b}", r"invalid variable name 'a\.\.b'", 5),
        ("x://{.a.}", r"invalid variable name 'a\.'", 6),
        ("x://{a%2}", r"invalid variable name 'a%2'", 5),
        ("x://{ a}", r"invalid variable name ' a'", 5),
        ("x://{a,}", r"expected a variable name in expression '\{a,\}'", 7),
        ("x://{?}", r"expected a variable name in expression '\{\?\}'", 6),
    ],
)
def test_parse_rejects_malformed_templates(template: str, message: str, position: int) -> None:
    with pytest.raises(UriTemplateError, match=message) as excinfo:
        UriTemplate.parse(template)
    assert excinfo.value.position == position
    assert excinfo.value.template == template
    assert f"at offset {position} in URI template {template!r}" in str(excinfo.value)


def test_template_error_is_a_value_error_and_ours() -> None:
    with pytest.raises(ValueError, match="never closed") as excinfo:
        UriTemplate.parse("{a")
    assert isinstance(excinfo.value, MCPActorError)


def test_parse_accepts_rfc_variable_names() -> None:
    template = UriTemplate.parse("x://{a.b,c_1,%C3%A9}")
    assert template.variables == ("a.b", "c_1", "%C3%A9")
    assert template.expand({"a.b": "1", "%C3%A9": "2"}) == "x://1,2"


@pytest.mark.parametrize(
    ("template", "uri", "expected"),
    [
        # the MCP shapes
        ("file:///{path}", "file:///notes.txt", {"path": "notes.txt"}),
        ("file:///{path}", "file:///a/b", None),
        ("file:///{path}", "file:///a?b", None),
        ("file:///{path}", "file:///a#b", None),
        ("file:///{path}", "http:///a", None),
        ("file:///{+path}", "file:///a/b?c#d", {"path": "a/b?c#d"}),
        ("test://template/{id}/data", "test://template/123/data", {"id": "123"}),
        ("test://template/{id}/data", "test://template/123/data/", None),
        ("test://template/{id}/data", "test://template/1/2/data", None),
        ("test://template/{id}/data", "test://template/123/dat", None),
        ("db://{table}/rows{?limit,offset}", "db://users/rows", {"table": "users"}),
        (
            "db://{table}/rows{?limit,offset}",
            "db://users/rows?limit=5&offset=10",
            {"table": "users", "limit": "5", "offset": "10"},
        ),
        (
            "db://{table}/rows{?limit,offset}",
            "db://users/rows?offset=10&limit=5",
            {"table": "users", "limit": "5", "offset": "10"},
        ),
        (
            "db://{table}/rows{?limit,offset}",
            "db://users/rows?offset=10",
            {"table": "users", "offset": "10"},
        ),
        ("db://{table}/rows{?limit,offset}", "db://users/rows?sort=x", None),
        ("db://{table}/rows{?limit,offset}", "db://users/rows?limit=1&sort=x", None),
        ("db://{table}/rows{?limit,offset}", "db://users/rows?", None),
        ("db://{table}/rows{?limit,offset}", "db://users/rows?limit=1&limit=2", None),
        (
            "db://{table}/rows{?limit,offset}",
            "db://users/rows?limit=1&limit=1",
            {"table": "users", "limit": "1"},
        ),
        ("db://{table}/rows{?limit}", "db://users/rows?limit", {"table": "users", "limit": ""}),
        ("db://{table}/rows{?limit}", "db://users/rows?limitx=1", None),
        # percent-decoding, and lenience towards characters expansion would encode
        ("x://{a}", "x://Hello%20World%21", {"a": "Hello World!"}),
        ("x://{a}", "x://%C3%A9t%C3%a9", {"a": "été"}),
        ("x://{a}", "x://john@example.com", {"a": "john@example.com"}),
        ("x://{a}", "x://a,b", {"a": "a,b"}),
        ("x://{a}", "x://été", {"a": "été"}),
        ("x://{a}", "x://50%", None),
        ("x://{a}", "x://50%2", None),
        ("x://{a}", "x://%zz", None),
        ("x://{a}", "x://%FF", None),
        ("x://{a}", "x://%C3", None),
        ("x://{a}", "x://", {"a": ""}),
        # a value stops where the template's next text starts
        ("file:///{name}.txt", "file:///my.notes.txt", {"name": "my.notes"}),
        ("file:///{name}.txt", "file:///notes.md", None),
        ("x://{y}-{m}-{d}", "x://2025-06-18", {"y": "2025", "m": "06", "d": "18"}),
        ("x://{name}{.ext}", "x://archive.tar.gz", {"name": "archive", "ext": "tar.gz"}),
        ("x://{name}{.ext}", "x://archive", {"name": "archive"}),
        ("x://{name}{.ext}", "x://archive.", {"name": "archive", "ext": ""}),
        ("x://{+path}{?q}", "x://a/b?q=1", {"path": "a/b", "q": "1"}),
        ("x://{+path}{?q}", "x://a/b?r=1", None),
        ("x://{+path}{#frag}", "x://a/b#c#d", {"path": "a/b", "frag": "c#d"}),
        ("x://{+base}/index.html", "x://a/b/index.html", {"base": "a/b"}),
        ("x{?a}/y", "x?a=1/y", {"a": "1"}),
        ("x{?a}/y", "x/y", {}),
        # reserved and fragment values span "/"; simple, label and path ones do not
        ("x://h/{+a}/z", "x://h/1/2/z", {"a": "1/2"}),
        ("x://h{#a}", "x://h#/1/2?3", {"a": "/1/2?3"}),
        ("x://h{#a}", "x://h", {}),
        ("x://h{.a}", "x://h.b/c", None),
        ("x://h{/a,b}", "x://h/1/2", {"a": "1", "b": "2"}),
        ("x://h{/a,b}", "x://h/1", {"a": "1"}),
        ("x://h{/a,b}", "x://h/1/2/3", None),
        ("x://h{/a,b}", "x://h/a%2Fb/c", {"a": "a/b", "b": "c"}),
        # path-style parameters
        ("x://h{;a,b}", "x://h;b=2;a", {"a": "", "b": "2"}),
        ("x://h{;a,b}", "x://h;a=1;c=3", None),
        ("x://h{;a,b}", "x://h;a=1/2", None),
        # continuation, in the order of its expressions
        ("x://h{?a}{&b}", "x://h?a=1&b=2", {"a": "1", "b": "2"}),
        ("x://h{?a}{&b}", "x://h&b=2", {"b": "2"}),
        ("x://h{?a}{&b}", "x://h?b=2", None),
        ("x://h?fixed=yes{&a}", "x://h?fixed=yes&a=%26", {"a": "&"}),
        ("x://h?fixed=yes{&a}", "x://h?fixed=no&a=1", None),
        # a variable used twice must have one value
        ("x://{a}/{a}", "x://1/1", {"a": "1"}),
        ("x://{a}/{a}", "x://1/2", None),
        ("x://{a}/{a}", "x://%41/A", {"a": "A"}),
        ("x://{a}{?a}", "x://1?a=2", None),
        ("x://{a}{?a}", "x://1?a=1", {"a": "1"}),
        # literals as expanded and as written
        ("x://my docs/{a}", "x://my%20docs/1", {"a": "1"}),
        ("x://my docs/{a}", "x://my docs/1", {"a": "1"}),
        ("x://données/{a}", "x://donn%C3%A9es/1", {"a": "1"}),
        ("x://données/{a}", "x://données/1", {"a": "1"}),
    ],
)
def test_match(template: str, uri: str, expected: dict[str, str] | None) -> None:
    assert UriTemplate.parse(template).match(uri) == expected


@pytest.mark.parametrize(
    ("template", "uri"),
    [
        ("x://{y}-{m}-{d}/x", "x://" + "-" * 20_000),
        ("x://{a}.{b}.{c}/x", "x://" + "a." * 10_000),
        ("x://{+a}/{+b}/{+c}/z", "x://" + "/" * 20_000),
        ("x://{t}/rows{?a,b}/x", "x://t/rows?a=" + "/" * 20_000),
        ("x://h{;a,b}/x", "x://h" + ";a=" * 10_000),
    ],
)
def test_match_time_is_linear_in_the_uri(template: str, uri: str) -> None:
    # A backtracking regex needs O(n³) steps here: minutes for a few thousand
    # characters, with the whole trio run blocked.
    parsed = UriTemplate.parse(template)
    start = time.perf_counter()
    assert parsed.match(uri) is None
    assert time.perf_counter() - start < 2.0


# -- round trips ---------------------------------------------------------------

PCT_TRIPLET = re.compile(r"%[0-9A-Fa-f]{2}")
# Any text expansion can encode (UTF-8, so no lone surrogates).
texts = st.text(st.characters(codec="utf-8"), max_size=30)
# "+" and "#" pass %XX through unchanged, so such text cannot round-trip (RFC 6570 §3.2.3).
reserved_texts = texts.filter(lambda s: PCT_TRIPLET.search(s) is None)
optional_texts = st.none() | texts


def defined(values: dict[str, str | None]) -> dict[str, str]:
    return {name: value for name, value in values.items() if value is not None}


@given(a=texts)
def test_round_trip_simple(a: str) -> None:
    template = UriTemplate.parse("x://h/{a}/y")
    assert template.match(template.expand({"a": a})) == {"a": a}


@given(a=texts, b=texts, c=texts)
def test_round_trip_simple_list(a: str, b: str, c: str) -> None:
    template = UriTemplate.parse("x://h/{a,b}/{c}")
    values = {"a": a, "b": b, "c": c}
    assert template.match(template.expand(values)) == values


@given(path=reserved_texts)
def test_round_trip_reserved(path: str) -> None:
    template = UriTemplate.parse("file:///{+path}")
    assert template.match(template.expand({"path": path})) == {"path": path}


@given(path=reserved_texts.filter(lambda s: "/here" not in s))
def test_round_trip_reserved_before_literal(path: str) -> None:
    # A value never contains the literal that follows it in the template.
    template = UriTemplate.parse("x://{+path}/here")
    assert template.match(template.expand({"path": path})) == {"path": path}


@given(path=reserved_texts.filter(lambda s: "?" not in s), q=optional_texts)
def test_round_trip_reserved_before_query(path: str, q: str | None) -> None:
    template = UriTemplate.parse("x://{+path}{?q}")
    values = {"path": path, "q": q}
    assert template.match(template.expand(values)) == defined(values)


@given(a=texts, b=optional_texts, c=optional_texts)
def test_round_trip_path_segments(a: str, b: str | None, c: str | None) -> None:
    # b may only be undefined when c is, or c's value would shift into b's place.
    values = {"a": a, "b": b, "c": c if b is not None else None}
    template = UriTemplate.parse("x://h{/a,b}{/c}")
    assert template.match(template.expand(values)) == defined(values)


@given(table=texts, limit=optional_texts, offset=optional_texts)
def test_round_trip_query(table: str, limit: str | None, offset: str | None) -> None:
    template = UriTemplate.parse("db://{table}/rows{?limit,offset}")
    values = {"table": table, "limit": limit, "offset": offset}
    assert template.match(template.expand(values)) == defined(values)


@given(a=optional_texts, b=optional_texts, c=optional_texts)
def test_round_trip_query_continuation(a: str | None, b: str | None, c: str | None) -> None:
    template = UriTemplate.parse("x://h{?a}{&b,c}")
    values = {"a": a, "b": b, "c": c}
    assert template.match(template.expand(values)) == defined(values)


@given(a=optional_texts, b=optional_texts)
def test_round_trip_path_parameters(a: str | None, b: str | None) -> None:
    template = UriTemplate.parse("x://h/p{;a,b}")
    values = {"a": a, "b": b}
    assert template.match(template.expand(values)) == defined(values)


@given(name=texts.filter(lambda s: "." not in s), ext=optional_texts)
def test_round_trip_label(name: str, ext: str | None) -> None:
    template = UriTemplate.parse("x://h/{name}{.ext}")
    values = {"name": name, "ext": ext}
    assert template.match(template.expand(values)) == defined(values)


@given(page=texts, fragment=st.none() | reserved_texts)
def test_round_trip_fragment(page: str, fragment: str | None) -> None:
    template = UriTemplate.parse("x://h/{page}{#fragment}")
    values = {"page": page, "fragment": fragment}
    assert template.match(template.expand(values)) == defined(values)


URI_CHARACTERS = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*")


@given(a=texts, b=optional_texts)
def test_expansion_is_a_uri(a: str, b: str | None) -> None:
    expanded = UriTemplate.parse("x://h/{a}{/b}{?b}{#a}").expand({"a": a, "b": b})
    assert URI_CHARACTERS.fullmatch(expanded) is not None


MATCH_TEMPLATES = [
    "file:///{path}",
    "file:///{+path}",
    "db://{table}/rows{?limit,offset}",
    "x://{a}/{a}{?a}",
    "x://h{/a,b}{;c}{.d}{&e}",
    "x://{+a}/{+b}{#c}",
    "x://{a}{b}{+c}",
]


@given(
    template=st.sampled_from(MATCH_TEMPLATES),
    uri=st.text(st.sampled_from("x:/{}?&=;.,#%2Ab")) | st.text(),
)
def test_match_reports_only_template_variables(template: str, uri: str) -> None:
    parsed = UriTemplate.parse(template)
    result = parsed.match(uri)
    assert result is None or set(result) <= set(parsed.variables)


# Characters that are delimiters nowhere in the templates below, so a client may
# send them raw instead of percent-encoded.
RAW_ALLOWED = {quote(char, safe=""): char for char in "@!$'()*:[] é"}
ENCODED = re.compile("%C3%A9|%[0-9A-F]{2}")  # one character at a time
raw_texts = st.text(st.sampled_from(sorted(RAW_ALLOWED.values())) | st.characters(codec="utf-8"))


@given(
    template=st.sampled_from(["x://h/{a}/y", "db://{a}/rows{?b,c}", "x://h{/a,b}{;c}"]),
    a=raw_texts,
    b=st.none() | raw_texts,
    c=st.none() | raw_texts,
)
def test_match_accepts_raw_characters(template: str, a: str, b: str | None, c: str | None) -> None:
    parsed = UriTemplate.parse(template)
    given_values = {"a": a, "b": b, "c": c}
    values = {name: given_values[name] for name in parsed.variables}
    uri = parsed.expand(values)
    raw = ENCODED.sub(lambda m: RAW_ALLOWED.get(m.group(), m.group()), uri)
    assert parsed.match(raw) == defined(values)
