"""The Server Card and the AI Catalog (SEP-2127, experimental), served by the HTTP app.

Every card and catalog is validated against the schema written from the draft
(tests/spec/server-card/). The real ``mcpactor serve --http`` answers them on both HTTP
servers; the rest runs the app in process.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import jsonschema
import orjson
import pytest
import trio

from mcpactor import Server
from mcpactor.auth import Principal, ResourceServer
from mcpactor.config import ConfigError, Reader
from mcpactor.config._http import read_http_config
from mcpactor.protocol import ALL_VERSIONS
from mcpactor.transports import HttpOptions, ServerCardOptions, open_http_app, server_card

from ._cli import server_file, serving
from ._http_client import AsgiClient, Response, SocketClient
from ._http_server import asgi_client

SCHEMA: Final = json.loads(
    (Path(__file__).resolve().parents[1] / "spec" / "server-card" / "schema.json").read_text()
)
CARD_TYPE: Final = "application/mcp-server-card+json"
CATALOG_TYPE: Final = "application/ai-catalog+json"
GUARD: Final = 60

WEATHER: Final = """
    from mcpactor import Server

    server = Server(
        "weather",
        "2.1.0",
        title="Weather",
        description="Forecasts for any city",
        website_url="https://weather.example.com",
    )

    @server.tool()
    async def forecast(city: str) -> str:
        return "sunny"
"""
CLOCK: Final = """
    from mcpactor import Server

    server = Server("clock", "1.0.0", description="The time")

    @server.tool()
    async def now() -> str:
        return "noon"
"""
NOTES: Final = """
    from mcpactor import Server

    server = Server("notes", "0.3.0", description="Notes")

    @server.tool()
    async def add(text: str) -> str:
        return text
"""


def check_card(card: Any) -> None:
    jsonschema.validate(card, {**SCHEMA, "$ref": "#/$defs/ServerCard"})


def check_catalog(catalog: Any) -> None:
    jsonschema.validate(catalog, {**SCHEMA, "$ref": "#/$defs/AiCatalog"})


async def read(response: Response) -> Any:
    return orjson.loads(await response.body())


# --- the real server ------------------------------------------------------------------


@pytest.mark.parametrize("http_server", ["builtin", "hypercorn"])
async def test_serve_http_answers_the_card_and_the_catalog(
    tmp_path: Path, http_server: str
) -> None:
    server_file(tmp_path, "weather.py", WEATHER)
    arguments = [str(tmp_path / "weather.py"), "--http", "127.0.0.1:0"]
    with trio.fail_after(GUARD):
        async with (
            serving([*arguments, "--http-server", http_server]) as served,
            trio.open_nursery() as nursery,
        ):
            http = SocketClient("127.0.0.1", served.port, nursery)
            got = await http.request("GET", "/mcp/server-card", {"accept": CARD_TYPE})
            assert got.status == 200
            assert got.content_type == CARD_TYPE
            card = await read(got)
            check_card(card)
            assert card["name"] == "127.0.0.1/weather"
            assert (card["title"], card["version"]) == ("Weather", "2.1.0")
            assert card["description"] == "Forecasts for any city"
            assert card["websiteUrl"] == "https://weather.example.com"
            streamable, sse = card["remotes"]
            assert streamable == {
                "type": "streamable-http",
                "url": served.url,
                "supportedProtocolVersions": list(ALL_VERSIONS),
            }
            assert (sse["type"], sse["url"]) == ("sse", served.url.replace("/mcp", "/sse"))
            assert "2026-07-28" not in sse["supportedProtocolVersions"]
            # Public, cacheable, with a strong validator.
            etag = got.headers["etag"]
            assert etag[0] == etag[-1] == '"', etag
            assert got.headers["cache-control"] == "public, max-age=3600"
            assert got.headers["access-control-allow-origin"] == "*"
            assert "ETag" in got.headers["access-control-expose-headers"]

            again = await http.request("GET", "/mcp/server-card", {"if-none-match": etag})
            assert (again.status, await again.body()) == (304, b"")
            assert again.headers["etag"] == etag
            other = await http.request("GET", "/mcp/server-card", {"if-none-match": '"x"'})
            assert other.status == 200

            head = await http.request("HEAD", "/mcp/server-card", {})
            assert (head.status, await head.body()) == (200, b"")
            assert (head.headers["etag"], head.content_type) == (etag, CARD_TYPE)

            preflight = await http.request(
                "OPTIONS",
                "/mcp/server-card",
                {
                    "origin": "https://elsewhere.example",
                    "access-control-request-method": "GET",
                    "access-control-request-headers": "if-none-match",
                },
            )
            assert preflight.status == 204
            assert preflight.headers["access-control-allow-origin"] == "*"
            assert "GET" in preflight.headers["access-control-allow-methods"]
            assert "If-None-Match" in preflight.headers["access-control-allow-headers"]

            for method in ("POST", "PUT", "DELETE"):
                refused = await http.request(method, "/mcp/server-card", {}, b"{}")
                assert refused.status == 405
                assert refused.headers["allow"] == "GET, HEAD, OPTIONS"

            listed = await http.request("GET", "/.well-known/ai-catalog.json", {})
            assert (listed.status, listed.content_type) == (200, CATALOG_TYPE)
            catalog = await read(listed)
            check_catalog(catalog)
            assert catalog["entries"] == [
                {
                    "identifier": "urn:air:127.0.0.1:mcp:weather",
                    "type": CARD_TYPE,
                    "url": served.url + "/server-card",
                }
            ]
            await http.aclose()


async def test_the_catalog_of_two_mounted_servers_names_the_one_endpoint(
    tmp_path: Path,
) -> None:
    # Mounted servers are served as one, at one endpoint, under one serverInfo: one card,
    # since a card per mounted server would contradict what a client sees on connecting.
    server_file(tmp_path, "clock.py", CLOCK)
    server_file(tmp_path, "notes.py", NOTES)
    config = server_file(
        tmp_path,
        "mcpactor.toml",
        """
        transport = "http"
        [http]
        port = 0
        [http.server_card]
        name = "com.example/desk"
        description = "The clock and the notes of the desk"
        catalog_entries = {"urn:air:example.com:mcp:mail" = "https://mail.example.com/mcp/server-card"}
        repository = {url = "https://github.com/example/desk", source = "github"}
        [servers.clock]
        target = "clock.py"
        [servers.notes]
        target = "notes.py"
        """,
    )
    with trio.fail_after(GUARD):
        async with serving(["--config", str(config)]) as served, trio.open_nursery() as nursery:
            http = SocketClient("127.0.0.1", served.port, nursery)
            catalog = await read(await http.request("GET", "/.well-known/ai-catalog.json", {}))
            check_catalog(catalog)
            assert catalog["entries"] == [
                {
                    "identifier": "urn:air:example.com:mcp:desk",
                    "type": CARD_TYPE,
                    "url": served.url + "/server-card",
                },
                {
                    "identifier": "urn:air:example.com:mcp:mail",
                    "type": CARD_TYPE,
                    "url": "https://mail.example.com/mcp/server-card",
                },
            ]
            card = await read(await http.request("GET", "/mcp/server-card", {}))
            check_card(card)
            assert card["name"] == "com.example/desk"
            assert card["description"] == "The clock and the notes of the desk"
            assert card["repository"] == {
                "url": "https://github.com/example/desk",
                "source": "github",
            }
            assert card["remotes"][0]["url"] == served.url
            await http.aclose()


async def test_the_config_file_switches_the_card_and_the_catalog_off(tmp_path: Path) -> None:
    server_file(tmp_path, "clock.py", CLOCK)
    config = server_file(
        tmp_path,
        "mcpactor.toml",
        """
        transport = "http"
        [http]
        port = 0
        [http.server_card]
        enabled = false
        catalog = false
        [servers.clock]
        target = "clock.py"
        """,
    )
    with trio.fail_after(GUARD):
        async with serving(["--config", str(config)]) as served, trio.open_nursery() as nursery:
            http = SocketClient("127.0.0.1", served.port, nursery)
            for path in ("/mcp/server-card", "/.well-known/ai-catalog.json"):
                assert (await http.request("GET", path, {})).status == 404
            await http.aclose()


# --- in process -----------------------------------------------------------------------


def weather() -> Server:
    return Server("weather", "1.0.0", description="Forecasts")


async def test_the_card_changes_with_the_servers_identity_not_with_its_tools() -> None:
    server = weather()
    async with asgi_client(server) as (_, http):
        first = await http.request("GET", "/mcp/server-card", {})
        etag = first.headers["etag"]

        # The draft leaves tools out of a card: adding one changes nothing in it.
        @server.tool()
        async def forecast(city: str) -> str:
            return "sunny"

        same = await http.request("GET", "/mcp/server-card", {"if-none-match": etag})
        assert same.status == 304
        server.version = "1.1.0"
        changed = await http.request("GET", "/mcp/server-card", {"if-none-match": etag})
        assert changed.status == 200
        assert changed.headers["etag"] != etag
        card = await read(changed)
        check_card(card)
        assert card["version"] == "1.1.0"
        assert not {"tools", "capabilities"} & set(card)


async def test_the_card_is_public_on_an_oauth_resource_and_says_a_token_is_needed() -> None:
    class Refuse:
        async def verify(self, token: str) -> Principal:
            raise AssertionError("the card is served without looking at tokens")

    resource = ResourceServer(
        resource="https://mcp.example.com/mcp",
        authorization_servers=["https://auth.example.com"],
        verifier=Refuse(),
    )
    options = HttpOptions(resource_server=resource)
    async with asgi_client(weather(), options=options) as (_, http):
        refused = await http.request("GET", "/mcp", {"accept": "text/event-stream"})
        assert refused.status == 401
        # Any Host: the URL is the resource's, not the request's.
        got = await http.request("GET", "/mcp/server-card", {"host": "10.0.0.9:8000"})
        assert got.status == 200
        card = await read(got)
        check_card(card)
        assert card["name"] == "com.example.mcp/weather"
        (header,) = card["remotes"][0]["headers"]
        assert card["remotes"][0]["url"] == "https://mcp.example.com/mcp"
        assert (header["name"], header["isRequired"], header["isSecret"]) == (
            "Authorization",
            True,
            True,
        )
        assert "/.well-known/oauth-protected-resource/mcp" in header["description"]
        catalog = await read(await http.request("GET", "/.well-known/ai-catalog.json", {}))
        assert catalog["entries"][0]["url"] == "https://mcp.example.com/mcp/server-card"


async def test_a_host_the_server_does_not_answer_to_gets_no_card() -> None:
    async with asgi_client(weather()) as (_, http):
        refused = await http.request("GET", "/mcp/server-card", {"host": "evil.example"})
        assert refused.status == 421
    # A configured URL does not depend on the Host.
    options = HttpOptions(server_card=ServerCardOptions(url="https://mcp.example.com/tools/mcp"))
    async with asgi_client(weather(), options=options) as (_, http):
        got = await http.request("GET", "/mcp/server-card", {"host": "evil.example"})
        card = await read(got)
        assert [remote["url"] for remote in card["remotes"]] == [
            "https://mcp.example.com/tools/mcp",
            "https://mcp.example.com/tools/sse",
        ]


async def test_the_card_follows_the_endpoint_path_and_the_legacy_switch() -> None:
    options = HttpOptions(sse_path=None, messages_path=None)
    async with (
        trio.open_nursery() as nursery,
        open_http_app(weather(), path="/tools/weather", options=options) as app,
    ):
        http = AsgiClient(app, nursery)
        card = await read(await http.request("GET", "/tools/weather/server-card", {}))
        check_card(card)
        assert card["remotes"] == [
            {
                "type": "streamable-http",
                "url": "http://127.0.0.1:8000/tools/weather",
                "supportedProtocolVersions": list(ALL_VERSIONS),
            }
        ]
        assert (await http.request("GET", "/mcp/server-card", {})).status == 404


def test_descriptions_are_cut_and_names_made_to_fit_the_draft() -> None:
    server = Server("my weather server!", "1", description="x" * 300)
    card = server_card(server, "https://api.weather.example.com/mcp")
    check_card(card)
    assert card["name"] == "com.example.weather.api/my-weather-server"
    assert len(card["description"]) == 100
    assert card["description"].endswith("…")
    # A name already in the draft's form is kept.
    assert server_card(Server("io.github.me/x", "1"), "http://h/mcp")["name"] == "io.github.me/x"


@pytest.mark.parametrize(
    ("given", "complaint"),
    [
        ({"name": "no-slash"}, "reverse-DNS"),
        ({"description": "x" * 101}, "1 to 100"),
        ({"url": "ftp://x"}, r"http\(s\) URL"),
        ({"repository": {"url": "https://x"}}, "source"),
        ({"max_age": -1}, "max_age"),
        ({"headers": [{"value": "x"}]}, "name"),
    ],
)
def test_bad_card_options_are_refused(given: dict[str, Any], complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint):
        ServerCardOptions(**given)


def test_options_with_mappings_stay_hashable() -> None:
    card = ServerCardOptions(
        repository={"url": "https://github.com/example/x", "source": "github"},
        catalog_entries={"urn:air:example.com:mcp:x": "https://example.com/x/server-card"},
        headers=[{"name": "X-Api-Key", "isRequired": True}],
    )
    assert hash(HttpOptions(server_card=card)) == hash(HttpOptions(server_card=card))
    assert server_card(weather(), "https://example.com/mcp", options=card)["remotes"][0][
        "headers"
    ] == [{"name": "X-Api-Key", "isRequired": True}]


def test_the_config_table_is_checked(tmp_path: Path) -> None:
    reader = Reader(tmp_path / "mcpactor.toml", "http")
    read = read_http_config(reader, {"server_card": {"title": "Desk", "max_age": 60}})
    assert read.options()["server_card"] == ServerCardOptions(title="Desk", max_age=60)
    with pytest.raises(ConfigError, match=r"http\.server_card\.colour: unknown key"):
        read_http_config(reader, {"server_card": {"colour": "blue"}})
    with pytest.raises(ConfigError, match=r"http\.server_card: name must be"):
        read_http_config(reader, {"server_card": {"name": "desk"}})
