"""``mcpactor serve --auth-*`` and the ``[auth]`` table: what they build, what they refuse.

In process, with the HTTP server replaced by one that records what it was given.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any, Final

import pytest
import trio

from mcpactor import Server
from mcpactor.auth import CombinedVerifier, JwtVerifier, ResourceServer
from mcpactor.cli import main
from mcpactor.config import AuthConfig, ConfigError, load_config
from mcpactor.transports import HttpOptions

GOOD: Final = """
from mcpactor import Server

server = Server("good")


@server.tool(scopes=["admin"])
def wipe() -> str:
    return "wiped"
"""

VERIFIER: Final = """
from mcpactor.auth import InvalidToken, Principal


class Fixed:
    async def verify(self, token):
        if token == "s3cret":
            return Principal("alice", issuer="https://auth.example.com")
        raise InvalidToken("unknown token")


def make():
    return Fixed()


def not_a_verifier():
    return 42


def broken():
    raise RuntimeError("no keys today")
"""

RESOURCE: Final = "https://mcp.example.com/mcp"
ISSUER: Final = "https://auth.example.com"


class Recorded:
    """What ``serve_http`` was called with, in place of serving."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    @property
    def options(self) -> HttpOptions:
        (call,) = self.calls
        options = call["options"]
        assert isinstance(options, HttpOptions)
        return options

    @property
    def resource_server(self) -> ResourceServer:
        resource_server = self.options.resource_server
        assert resource_server is not None
        return resource_server


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> Recorded:
    record = Recorded()

    async def fake_serve_http(
        server: Server, *, task_status: trio.TaskStatus[tuple[str, int]], **kwargs: Any
    ) -> None:
        record.calls.append({"server": server, **kwargs})
        task_status.started(("127.0.0.1", 1))

    monkeypatch.setattr("mcpactor.transports.serve_http", fake_serve_http)
    return record


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def files(tmp_path: Path) -> Path:
    write(tmp_path / "good.py", GOOD)
    write(tmp_path / "verifiers.py", VERIFIER)
    return tmp_path


def serve(files: Path, *flags: str) -> list[str]:
    return ["serve", str(files / "good.py"), "--http", "0", *flags]


def test_the_flags_build_a_resource_server(files: Path, recorded: Recorded) -> None:
    argv = serve(
        files,
        "--auth-issuer",
        ISSUER,
        "--auth-issuer",
        "https://other.example.com",
        "--auth-resource",
        RESOURCE,
        "--auth-scope",
        "mcp",
        "--auth-scope",
        "read",
        "--auth-algorithm",
        "ES256",
        "--auth-leeway",
        "5",
        "--auth-hide-unauthorized",
    )
    assert main(argv) == 0
    rs = recorded.resource_server
    assert rs.resource == RESOURCE
    assert rs.authorization_servers == (ISSUER, "https://other.example.com")
    assert rs.required_scopes == ("mcp", "read")
    assert rs.hide_unauthorized is True
    assert isinstance(rs.verifier, JwtVerifier)
    assert recorded.options.authenticate is None


def test_no_auth_flag_means_no_resource_server(files: Path, recorded: Recorded) -> None:
    assert main(serve(files)) == 0
    assert recorded.options.resource_server is None


def test_a_verifier_factory_is_called(files: Path, recorded: Recorded) -> None:
    argv = serve(
        files,
        "--auth-issuer",
        ISSUER,
        "--auth-resource",
        RESOURCE,
        "--auth-verifier",
        f"{files / 'verifiers.py'}:make",
    )
    assert main(argv) == 0
    verifier = recorded.resource_server.verifier
    assert type(verifier).__name__ == "Fixed"
    assert trio.run(verifier.verify, "s3cret").subject == "alice"


def test_the_auth_table_builds_a_resource_server(files: Path, recorded: Recorded) -> None:
    write(files / "secret.txt", "  hunter2\n")
    config = write(
        files / "mcpactor.toml",
        f"""
        transport = "http"
        [http]
        port = 0
        [servers.good]
        target = "good.py"
        [auth]
        issuers = ["{ISSUER}"]
        resource = "{RESOURCE}"
        required_scopes = ["mcp"]
        scopes_supported = ["mcp", "admin", "extra"]
        client_id = "mcp-server"
        client_secret_file = "secret.txt"
        algorithms = ["RS256", "EdDSA"]
        leeway_seconds = 10
        hide_unauthorized = true
        audiences = ["api://mcp", "6e1f-client-id"]
        scope_prefix = "api://mcp/"
        require_at_jwt = true
        introspection_cache_seconds = 30
        introspection_without_audience = true
        """,
    )
    loaded = load_config(config)
    assert loaded.auth == AuthConfig(
        issuers=(ISSUER,),
        resource=RESOURCE,
        audiences=("api://mcp", "6e1f-client-id"),
        required_scopes=("mcp",),
        scopes_supported=("mcp", "admin", "extra"),
        scope_prefix="api://mcp/",
        client_id="mcp-server",
        client_secret_file=str(files / "secret.txt"),
        algorithms=("RS256", "EdDSA"),
        leeway_seconds=10.0,
        require_at_jwt=True,
        introspection_cache_seconds=30.0,
        introspection_without_audience=True,
        hide_unauthorized=True,
    )
    assert main(["serve", "--config", str(config)]) == 0
    rs = recorded.resource_server
    assert rs.required_scopes == ("mcp",)
    assert rs.metadata()["resource"] == RESOURCE
    assert rs.metadata()["scopes_supported"] == [
        "api://mcp/mcp",
        "api://mcp/admin",
        "api://mcp/extra",
    ]
    assert 'scope="api://mcp/mcp"' in rs.challenge()
    assert rs.hide_unauthorized is True
    # JWTs are checked locally, other tokens introspected with the file's secret.
    verifier = rs.verifier
    assert isinstance(verifier, CombinedVerifier)
    assert verifier.jwt is not None
    assert verifier.introspection is not None
    # the audiences replace the resource URL; the introspection's answers are trusted
    # 30 s, and may name no audience
    assert verifier.jwt.audiences == {"api://mcp", "6e1f-client-id"}
    assert verifier.jwt.require_at_jwt is True
    assert verifier.introspection.audiences == {"api://mcp", "6e1f-client-id"}
    assert verifier.introspection.max_age == 30
    assert verifier.introspection.require_audience is False


def test_the_resource_is_the_audience_unless_audiences_are_given(
    files: Path, recorded: Recorded
) -> None:
    write(files / "secret.txt", "hunter2\n")
    base = serve(
        files,
        "--auth-issuer",
        ISSUER,
        "--auth-resource",
        RESOURCE,
        "--auth-client-id",
        "rs",
        "--auth-client-secret-file",
        str(files / "secret.txt"),
    )
    assert main(base) == 0
    verifier = recorded.resource_server.verifier
    assert isinstance(verifier, CombinedVerifier)
    assert verifier.jwt is not None
    assert verifier.introspection is not None
    assert verifier.jwt.audiences == {RESOURCE}
    assert verifier.jwt.require_at_jwt is False
    assert verifier.introspection.audiences == {RESOURCE}
    assert verifier.introspection.max_age == 300
    assert verifier.introspection.require_audience is True
    recorded.calls.clear()
    flags = [
        "--auth-audience",
        "api://mcp",
        "--auth-audience",
        "6e1f-client-id",
        "--auth-introspection-cache",
        "0",
        "--auth-introspection-without-audience",
        "--auth-require-at-jwt",
        "--auth-scope-prefix",
        "api://mcp/",
        "--auth-scope",
        "mcp",
    ]
    assert main([*base, *flags]) == 0
    rs = recorded.resource_server
    verifier = rs.verifier
    assert isinstance(verifier, CombinedVerifier)
    assert verifier.jwt is not None
    assert verifier.introspection is not None
    assert rs.resource == RESOURCE
    assert verifier.jwt.audiences == {"api://mcp", "6e1f-client-id"}
    assert verifier.jwt.require_at_jwt is True
    assert verifier.introspection.audiences == {"api://mcp", "6e1f-client-id"}
    assert verifier.introspection.max_age == 0
    assert verifier.introspection.require_audience is False
    assert rs.challenge() == (
        f'Bearer scope="api://mcp/mcp", resource_metadata="{rs.metadata_url}"'
    )


def test_flags_win_over_the_auth_table(files: Path, recorded: Recorded) -> None:
    config = write(
        files / "mcpactor.toml",
        f"""
        transport = "http"
        [http]
        port = 0
        [servers.good]
        target = "good.py"
        [auth]
        issuers = ["{ISSUER}"]
        resource = "{RESOURCE}"
        required_scopes = ["mcp"]
        verifier = "verifiers.py:make"
        """,
    )
    argv = ["serve", "--config", str(config), "--auth-scope", "other"]
    assert main(argv) == 0
    rs = recorded.resource_server
    assert rs.required_scopes == ("other",)
    assert type(rs.verifier).__name__ == "Fixed"


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--auth-scope", "mcp"], "--auth-scope: authorization needs --auth-resource"),
        (["--auth-resource", RESOURCE], "--auth-resource: authorization needs --auth-issuer"),
        (
            ["--auth-resource", "mcp.example.com", "--auth-issuer", ISSUER],
            "must be an absolute http(s) URL",
        ),
        (
            ["--auth-resource", RESOURCE, "--auth-issuer", ISSUER, "--auth-algorithm", "none"],
            "--auth-algorithm: 'none' is never accepted",
        ),
        (
            ["--auth-resource", RESOURCE, "--auth-issuer", ISSUER, "--auth-algorithm", "HS256"],
            "--auth-algorithm: 'HS256' needs a shared secret",
        ),
        (
            ["--auth-resource", RESOURCE, "--auth-issuer", ISSUER, "--auth-client-id", "x"],
            "introspection needs both the client id and the client secret",
        ),
        (
            [
                "--auth-resource",
                RESOURCE,
                "--auth-issuer",
                ISSUER,
                "--auth-client-id",
                "x",
                "--auth-client-secret-file",
                "/nonexistent/secret",
            ],
            "--auth-client-secret-file: cannot read '/nonexistent/secret'",
        ),
        (
            ["--auth-resource", RESOURCE, "--auth-issuer", ISSUER, "--auth-jwks-file", "/no"],
            "--auth-jwks-file: no such file '/no'",
        ),
        (
            ["--auth-resource", RESOURCE, "--auth-issuer", ISSUER, "--auth-scope", 'a"b'],
            "required_scopes",
        ),
        (
            ["--auth-resource", RESOURCE, "--auth-issuer", ISSUER, "--auth-scope-prefix", "a b"],
            "scope_prefix: a scope is printable ASCII",
        ),
    ],
)
def test_wrong_flags_are_named(
    files: Path,
    recorded: Recorded,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    expected: str,
) -> None:
    assert main(serve(files, *flags)) == 2
    assert expected in capsys.readouterr().err
    assert recorded.calls == []


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--auth-audience", "a b"], "--auth-audience: expected a name without spaces, got 'a b'"),
        (["--auth-audience", ""], "--auth-audience: expected a name without spaces, got ''"),
        (
            ["--auth-introspection-cache", "3601"],
            "--auth-introspection-cache: expected seconds from 0 to 3600, got '3601'",
        ),
        (
            ["--auth-introspection-cache", "nan"],
            "--auth-introspection-cache: expected seconds from 0 to 3600, got 'nan'",
        ),
    ],
)
def test_wrong_flag_values_are_named(
    files: Path,
    recorded: Recorded,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    expected: str,
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(serve(files, "--auth-resource", RESOURCE, "--auth-issuer", ISSUER, *flags))
    assert exited.value.code == 2
    assert f"argument {expected}" in capsys.readouterr().err
    assert recorded.calls == []


@pytest.mark.parametrize(
    ("factory", "expected"),
    [
        ("not_a_verifier", "returned a int, not a TokenVerifier"),
        ("broken", "failed: RuntimeError: no keys today"),
    ],
)
def test_a_verifier_factory_that_fails_is_named(
    files: Path,
    recorded: Recorded,
    capsys: pytest.CaptureFixture[str],
    factory: str,
    expected: str,
) -> None:
    argv = serve(
        files,
        "--auth-resource",
        RESOURCE,
        "--auth-issuer",
        ISSUER,
        "--auth-verifier",
        f"{files / 'verifiers.py'}:{factory}",
    )
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert "--auth-verifier: " in error
    assert expected in error
    assert recorded.calls == []


def test_a_verifier_with_built_in_settings_is_refused(
    files: Path, recorded: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = serve(
        files,
        "--auth-resource",
        RESOURCE,
        "--auth-issuer",
        ISSUER,
        "--auth-verifier",
        f"{files / 'verifiers.py'}:make",
        "--auth-jwks-file",
        str(files / "good.py"),
    )
    assert main(argv) == 2
    assert "--auth-jwks-file: not used with --auth-verifier" in capsys.readouterr().err
    for flag in (
        ["--auth-audience", "api://x"],
        ["--auth-introspection-cache", "10"],
        ["--auth-introspection-without-audience"],
        ["--auth-require-at-jwt"],
    ):
        assert main([*argv[:-2], *flag]) == 2
        assert f"{flag[0]}: not used with --auth-verifier" in capsys.readouterr().err
    assert recorded.calls == []


def test_authenticate_and_auth_together_are_refused(
    files: Path, recorded: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = serve(
        files,
        "--auth-resource",
        RESOURCE,
        "--auth-issuer",
        ISSUER,
        "--authenticate",
        f"{files / 'verifiers.py'}:make",
    )
    assert main(argv) == 2
    assert "two ways to admit requests" in capsys.readouterr().err


def test_auth_over_stdio_is_refused(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["serve", str(files / "good.py"), "--auth-resource", RESOURCE]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert "--auth-resource: authorization is for HTTP" in error
    assert "credentials from the environment" in error
    config = write(
        files / "mcpactor.toml",
        f"""
        [servers.good]
        target = "good.py"
        [auth]
        resource = "{RESOURCE}"
        """,
    )
    assert main(["serve", "--config", str(config)]) == 2
    assert f"{config}: auth.resource: authorization is for HTTP" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("issuers = 'x'", "auth.issuers: expected a list of strings, got 'x'"),
        ("issuers = ['auth.example.com']", "auth.issuers: expected an absolute http(s) URL"),
        ("resource = 'https://a/#f'", "auth.resource: expected an absolute http(s) URL"),
        ("required_scopes = ['a b']", "auth.required_scopes: expected names without spaces"),
        ("algorithms = ['none']", "auth.algorithms: 'none' is never accepted"),
        ("algorithms = []", "auth.algorithms: expected at least one algorithm"),
        ("leeway_seconds = -1", "auth.leeway_seconds: expected seconds from 0 to 600, got -1"),
        ("hide_unauthorized = 'yes'", "auth.hide_unauthorized: expected true or false"),
        ("verifier = 'nocolon'", "auth.verifier: expected 'module:function', got 'nocolon'"),
        ("client_id = 3", "auth.client_id: expected a string, got 3"),
        ("audiences = ['a b']", "auth.audiences: expected names without spaces, got 'a b'"),
        ("audiences = 'api://x'", "auth.audiences: expected a list of strings"),
        ("scope_prefix = 'a b'", "auth.scope_prefix: expected text without spaces"),
        ("require_at_jwt = 1", "auth.require_at_jwt: expected true or false"),
        (
            "introspection_cache_seconds = 4000",
            "auth.introspection_cache_seconds: expected seconds from 0 to 3600, got 4000",
        ),
        (
            "introspection_cache_seconds = nan",
            "auth.introspection_cache_seconds: expected seconds from 0 to 3600",
        ),
        (
            "introspection_without_audience = 'yes'",
            "auth.introspection_without_audience: expected true or false",
        ),
        ("issuer = []", "auth.issuer: unknown key"),
    ],
)
def test_a_wrong_auth_key_is_named(tmp_path: Path, text: str, expected: str) -> None:
    config = write(tmp_path / "mcpactor.toml", f"[auth]\n{text}\n")
    with pytest.raises(ConfigError) as info:
        load_config(config)
    message = str(info.value)
    assert message.startswith(f"{config}: ")
    assert expected in message


def test_relative_paths_in_auth_are_the_files(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    config = write(
        tmp_path / "conf" / "mcpactor.toml",
        """
        [auth]
        jwks_file = "keys/jwks.json"
        client_secret_file = "secret.txt"
        verifier = "hooks/v.py:make"
        """,
    )
    auth = load_config(config).auth
    assert auth is not None
    assert auth.jwks_file == str(tmp_path / "conf" / "keys" / "jwks.json")
    assert auth.client_secret_file == str(tmp_path / "conf" / "secret.txt")
    assert auth.verifier == f"{tmp_path / 'conf' / 'hooks' / 'v.py'}:make"
    # A module name is a module name, not a path.
    other = write(tmp_path / "other.toml", "[auth]\nverifier = 'pkg.mod:make'\n")
    other_auth = load_config(other).auth
    assert other_auth is not None
    assert other_auth.verifier == "pkg.mod:make"


def test_every_auth_key_is_documented_with_its_flag() -> None:
    import argparse
    import re

    from mcpactor.cli import _build_parser
    from mcpactor.config import AUTH_KEYS

    text = (Path(__file__).resolve().parents[1] / "docs" / "configuration.md").read_text()
    start = text.index("## `[auth]`")
    end = text.find("\n## ", start + 1)
    # The [auth] section alone: the tables of later sections are theirs.
    section = text[start : end if end != -1 else len(text)]
    rows = [
        [cell.strip() for cell in line.strip("|").split(" | ")]
        for line in section.splitlines()
        if line.startswith("| `")
    ]
    documented = {re.findall(r"`([^`]*)`", row[0])[0]: row for row in rows}
    assert set(documented) == set(AUTH_KEYS)
    commands = next(
        a for a in _build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    )
    flags = {
        flag for action in commands.choices["serve"]._actions for flag in action.option_strings
    }
    named = [flag for row in rows for flag in re.findall(r"`(--[a-z-]+)`", row[3])]
    assert len(named) == len(AUTH_KEYS) - 1  # scopes_supported has no flag
    assert set(named) <= flags
