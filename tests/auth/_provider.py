"""A real authorization server for the authorization tests: ``oidc/provider.mjs`` on Node.

`running_provider` installs the Node program's locked dependencies when they are missing
(``npm ci``), starts it on a free loopback port, waits for the one line it prints once it
listens, and stops it on exit. `OidcProvider` is what a test gets: the issuer URL, the
clients' credentials and async helpers (httpx2 on trio) that obtain tokens the way real
clients do.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import selectors
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import attrs
import httpx2
import pytest

OIDC = Path(__file__).resolve().parent / "oidc"

#: where the public client is sent back with its code; nothing listens there, the
#: helpers stop at the redirect and read the code off the URL
REDIRECT_URI = "http://127.0.0.1/callback"

#: seconds any one wait may take (npm ci aside); the provider answers in milliseconds
TIMEOUT = 30.0
#: seconds npm ci may take on a fresh machine
INSTALL_TIMEOUT = 300.0
#: redirects followed through an authorization, at most (login, consent, back: about six)
MAX_REDIRECTS = 12


@attrs.frozen
class Client:
    """An OAuth client the provider knows: its id and, when confidential, its secret."""

    client_id: str
    client_secret: str | None = None


class AuthorizationFailed(AssertionError):
    """The provider refused a token or an authorization (with its error, bounded)."""


def _refused(what: str, response: httpx2.Response) -> AuthorizationFailed:
    return AuthorizationFailed(f"{what}: HTTP {response.status_code} {response.text[:500]!r}")


def pkce_pair() -> tuple[str, str]:
    """A PKCE code verifier and its S256 challenge (RFC 7636 §4.1-4.2)."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


async def follow_authorization(
    http: httpx2.AsyncClient, url: str, redirect_uri: str = REDIRECT_URI
) -> dict[str, str]:
    """Follow an authorization URL through login and consent to the client's redirect.

    The provider approves every interaction by itself, so this is what a browser would do
    for a user who clicks "yes": follow each redirect, keeping the provider's cookies,
    until one points at ``redirect_uri``. Returns that redirect's query (``code``,
    ``state``, ``iss``, or ``error``).
    """
    for _ in range(MAX_REDIRECTS):
        if url.startswith(redirect_uri):
            return {key: values[0] for key, values in parse_qs(urlsplit(url).query).items()}
        response = await http.get(url, follow_redirects=False)
        if response.status_code not in (302, 303):
            raise _refused(f"the authorization stopped at {url[:200]}", response)
        url = urljoin(url, response.headers["location"])
    raise AuthorizationFailed(f"more than {MAX_REDIRECTS} redirects, the last to {url[:200]}")


@attrs.frozen
class OidcProvider:
    """A running oidc-provider: its issuer, its clients, and helpers to get tokens from it."""

    issuer: str
    clients: Mapping[str, Client]

    @property
    def introspector(self) -> Client:
        """The confidential client a resource server introspects tokens with."""
        return self.clients["introspector"]

    async def metadata(self) -> dict[str, Any]:
        """The authorization server metadata (RFC 8414)."""
        return await self._get_json("/.well-known/oauth-authorization-server")

    async def jwks(self) -> dict[str, Any]:
        """The public signing keys the provider publishes."""
        return await self._get_json("/jwks")

    async def client_credentials_token(
        self, scope: str | Iterable[str] = (), resource: str | None = None, client: str = "service"
    ) -> str:
        """An access token of ``client`` (a name in ``clients``) for ``resource``."""
        answer = await self.client_credentials(scope=scope, resource=resource, client=client)
        token = answer["access_token"]
        assert isinstance(token, str)
        return token

    async def client_credentials(
        self, scope: str | Iterable[str] = (), resource: str | None = None, client: str = "service"
    ) -> dict[str, Any]:
        """The whole token response of a client_credentials grant (RFC 6749 §4.4)."""
        form = {"grant_type": "client_credentials", "scope": _scope(scope)}
        if resource is not None:
            form["resource"] = resource
        return await self._token(form, self.clients[client])

    async def authorization_code_token(
        self, resource: str, scope: str | Iterable[str] = (), login_hint: str = "test-user"
    ) -> str:
        """An access token of the public client for the user ``login_hint``, by code + PKCE."""
        answer = await self.authorization_code(resource, scope, login_hint)
        token = answer["access_token"]
        assert isinstance(token, str)
        return token

    async def authorization_code(
        self,
        resource: str | None,
        scope: str | Iterable[str] = (),
        login_hint: str = "test-user",
        *,
        prompt: str | None = None,
    ) -> dict[str, Any]:
        """The whole token response of the public client's code + PKCE flow.

        ``resource`` None asks for no resource indicator: the access token is then for the
        provider's userinfo endpoint. ``offline_access`` in ``scope`` with ``prompt``
        "consent" gets a refresh token too.
        """
        verifier, challenge = pkce_pair()
        state = secrets.token_urlsafe(16)
        client = self.clients["public"]
        query = {
            "client_id": client.client_id,
            "response_type": "code",
            "redirect_uri": REDIRECT_URI,
            "scope": _scope(scope),
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": state,
            "login_hint": login_hint,
        }
        if resource is not None:
            query["resource"] = resource
        if prompt is not None:
            query["prompt"] = prompt
        async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
            returned = await follow_authorization(http, f"{self.issuer}/auth?{urlencode(query)}")
        if "code" not in returned or returned.get("state") != state:
            raise AuthorizationFailed(f"the authorization came back without a code: {returned}")
        form = {
            "grant_type": "authorization_code",
            "code": returned["code"],
            "redirect_uri": REDIRECT_URI,
            "code_verifier": verifier,
            "client_id": client.client_id,
        }
        if resource is not None:
            form["resource"] = resource
        return await self._token(form, None)

    async def introspect(self, token: str) -> dict[str, Any]:
        """What the introspection endpoint says of ``token`` (RFC 7662), asked as the RS."""
        metadata = await self.metadata()
        client = self.introspector
        assert client.client_secret is not None
        async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
            response = await http.post(
                metadata["introspection_endpoint"],
                data={"token": token},
                auth=(client.client_id, client.client_secret),
            )
        if response.status_code != 200:
            raise _refused("introspection", response)
        answer: dict[str, Any] = response.json()
        return answer

    async def rotate_keys(self, *, retire: bool = False) -> str:
        """Sign every token from now on with a new key; returns its kid.

        The old keys stay in the JWKS unless ``retire``.
        """
        async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
            response = await http.post(
                f"{self.issuer}/test/rotate", params={"retire": "1"} if retire else None
            )
        if response.status_code != 200:
            raise _refused("key rotation", response)
        kid = response.json()["kid"]
        assert isinstance(kid, str)
        return kid

    async def _token(self, form: dict[str, str], client: Client | None) -> dict[str, Any]:
        async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
            if client is not None and client.client_secret is not None:
                auth = (client.client_id, client.client_secret)
                response = await http.post(f"{self.issuer}/token", data=form, auth=auth)
            else:
                response = await http.post(f"{self.issuer}/token", data=form)
        if response.status_code != 200:
            raise _refused("the token request was refused", response)
        answer: dict[str, Any] = response.json()
        return answer

    async def _get_json(self, path: str) -> dict[str, Any]:
        async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
            response = await http.get(f"{self.issuer}{path}")
        if response.status_code != 200:
            raise _refused(path, response)
        answer: dict[str, Any] = response.json()
        return answer


def _scope(scope: str | Iterable[str]) -> str:
    return scope if isinstance(scope, str) else " ".join(scope)


def _installed_version() -> str | None:
    try:
        installed = OIDC / "node_modules" / "oidc-provider" / "package.json"
        manifest = json.loads(installed.read_text())
    except (OSError, ValueError):
        return None
    version = manifest.get("version")
    return version if isinstance(version, str) else None


def _locked_version() -> str:
    lock = json.loads((OIDC / "package-lock.json").read_text())
    version = lock["packages"]["node_modules/oidc-provider"]["version"]
    assert isinstance(version, str)
    return version


def ensure_installed(npm: str) -> None:
    """Run ``npm ci`` in ``oidc/`` unless the locked oidc-provider is already there."""
    if _installed_version() == _locked_version():
        return
    # Two test runs in one checkout must not install over each other.
    with (OIDC / ".npm-ci.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _installed_version() == _locked_version():
            return
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=OIDC,
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
            check=False,
        )
        if done.returncode != 0:
            failure = done.stderr[-2000:]
            raise RuntimeError(f"npm ci in {OIDC} failed ({done.returncode}):\n{failure}")


def _read_ready_line(process: subprocess.Popen[bytes], errors: Path) -> dict[str, Any]:
    assert process.stdout is not None
    deadline = time.monotonic() + TIMEOUT
    pending = b""
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while b"\n" not in pending:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                raise RuntimeError(f"the provider did not start in {TIMEOUT} s:\n{_tail(errors)}")
            chunk = os.read(process.stdout.fileno(), 65536)
            if not chunk:
                code = process.wait(timeout=TIMEOUT)
                raise RuntimeError(f"the provider exited with {code}:\n{_tail(errors)}")
            pending += chunk
    ready: dict[str, Any] = json.loads(pending.split(b"\n", 1)[0])
    return ready


def _tail(path: Path) -> str:
    return path.read_text(errors="replace")[-2000:]


@contextlib.contextmanager
def running_provider() -> Iterator[OidcProvider]:
    """Start ``oidc/provider.mjs`` on a free loopback port; yields it once it listens.

    Skips the test when Node or npm is not installed.
    """
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("the authorization server of these tests runs on Node: install node and npm")
    ensure_installed(npm)
    with tempfile.TemporaryDirectory(prefix="mcpactor-oidc-") as folder:
        errors = Path(folder) / "stderr"
        with errors.open("wb") as stderr:
            # stdin stays open for the provider's life: it exits when we close it, so even
            # a test run that is killed leaves no provider behind.
            process = subprocess.Popen(
                [node, str(OIDC / "provider.mjs"), "--port", "0"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                cwd=OIDC,
            )
        try:
            ready = _read_ready_line(process, errors)
            clients = {
                name: Client(entry["client_id"], entry.get("client_secret"))
                for name, entry in ready["clients"].items()
            }
            yield OidcProvider(issuer=ready["issuer"], clients=clients)
        finally:
            assert process.stdin is not None
            process.stdin.close()
            try:
                process.wait(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            assert process.stdout is not None
            process.stdout.close()
