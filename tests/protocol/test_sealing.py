"""Sealed requestState: authentic, fresh, for this request and principal, or refused."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from mcpactor.protocol._sealing import (
    DEFAULT_TTL,
    MAX_TOKEN_LENGTH,
    KeyRing,
    SealingKey,
    StateRefused,
    StateSealer,
    request_digest,
)

NOW = 1_800_000_000.0
METHOD = "tools/call"
PARAMS: dict[str, Any] = {
    "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"},
    "name": "book",
    "arguments": {"city": "Oslo", "nights": 2},
}
STATE = {"answers": {"confirm": {"action": "accept", "content": {"ok": True}}}, "round": 1}


@pytest.fixture
def sealer() -> StateSealer:
    return StateSealer(KeyRing.of(SealingKey.generate("k1")), ttl=60)


def seal(sealer: StateSealer, **kwargs: Any) -> str:
    args: dict[str, Any] = {"method": METHOD, "params": PARAMS, "now": NOW}
    args.update(kwargs)
    return sealer.seal(STATE, **args)


def refused(sealer: StateSealer, token: object, **kwargs: Any) -> StateRefused:
    args: dict[str, Any] = {"method": METHOD, "params": PARAMS, "now": NOW + 1}
    args.update(kwargs)
    with pytest.raises(StateRefused) as info:
        sealer.open(token, **args)
    error = info.value
    assert error.code == -32602
    assert error.message.startswith("requestState refused: ")
    return error


def test_a_sealed_state_opens_on_a_retry_of_its_request(sealer: StateSealer) -> None:
    token = seal(sealer)
    assert token.startswith("1.k1.")
    # A retry carries other _meta, the answers and the state itself: none of it matters.
    retry = {
        **PARAMS,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "progressToken": 3},
        "inputResponses": {"confirm": {"action": "accept"}},
        "requestState": token,
    }
    assert sealer.open(token, method=METHOD, params=retry, now=NOW + 59.9) == STATE


def test_the_state_is_not_readable_in_the_token(sealer: StateSealer) -> None:
    token = seal(sealer)
    blob = base64.urlsafe_b64decode(token.split(".")[2] + "==")
    assert b"Oslo" not in blob
    assert b"accept" not in blob


def test_two_seals_of_the_same_state_differ(sealer: StateSealer) -> None:
    assert seal(sealer) != seal(sealer)


def test_the_key_ring_rotates() -> None:
    old = SealingKey.generate("old")
    new = SealingKey.generate("new")
    before = StateSealer(KeyRing.of(old))
    token = before.seal(STATE, method=METHOD, params=PARAMS, now=NOW)
    after = StateSealer(before.ring.rotated(new))
    assert after.ring.keys == (new, old)
    # the new key seals, the old one still opens
    assert after.seal(STATE, method=METHOD, params=PARAMS, now=NOW).startswith("1.new.")
    assert after.open(token, method=METHOD, params=PARAMS, now=NOW) == STATE
    # once the old key is dropped its tokens are refused by name
    dropped = StateSealer(after.ring.rotated(SealingKey.generate("newer"), keep=1))
    assert [k.key_id for k in dropped.ring.keys] == ["newer", "new"]
    assert refused(dropped, token).reason == "unknown_key"


def test_another_process_with_the_same_key_opens_it() -> None:
    text = SealingKey.generate("shared").to_text()
    one = StateSealer(KeyRing.of(SealingKey.from_text("shared", text)))
    two = StateSealer(KeyRing.of(SealingKey.from_text("shared", text)))
    token = one.seal(STATE, method=METHOD, params=PARAMS, now=NOW)
    assert two.open(token, method=METHOD, params=PARAMS, now=NOW) == STATE


# --- refusals ---------------------------------------------------------------------------


def test_a_forged_state_is_refused(sealer: StateSealer) -> None:
    other = StateSealer(KeyRing.of(SealingKey.generate("k1")))
    forged = seal(other)  # same key id, another secret
    assert refused(sealer, forged).reason == "not_authentic"


@pytest.mark.parametrize("position", [0, 5, 17, -3])
def test_a_tampered_state_is_refused(sealer: StateSealer, position: int) -> None:
    token = seal(sealer)
    prefix, body = token.rsplit(".", 1)
    # not the last character, whose low bits may be padding
    index = position % len(body)
    flipped = "A" if body[index] != "A" else "B"
    tampered = f"{prefix}.{body[:index]}{flipped}{body[index + 1 :]}"
    assert refused(sealer, tampered).reason in {"not_authentic", "malformed"}


def test_a_state_moved_to_another_key_id_is_refused() -> None:
    one = SealingKey.generate("one")
    two = SealingKey("two", one.secret)  # same secret under another id
    sealer = StateSealer(KeyRing.of(one, two))
    token = sealer.seal(STATE, method=METHOD, params=PARAMS, now=NOW)
    moved = token.replace("1.one.", "1.two.")
    assert refused(sealer, moved).reason == "not_authentic"


def test_an_expired_state_is_refused(sealer: StateSealer) -> None:
    token = seal(sealer)
    assert sealer.open(token, method=METHOD, params=PARAMS, now=NOW + 59) == STATE
    error = refused(sealer, token, now=NOW + 60)
    assert error.reason == "expired"
    assert "expired" in error.message


def test_the_default_ttl_is_minutes() -> None:
    sealer = StateSealer(KeyRing.of(SealingKey.generate("k")))
    assert sealer.ttl == DEFAULT_TTL
    token = sealer.seal(STATE, method=METHOD, params=PARAMS, now=NOW)
    assert refused(sealer, token, now=NOW + DEFAULT_TTL).reason == "expired"


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("prompts/get", PARAMS),
        (METHOD, {**PARAMS, "name": "cancel"}),
        (METHOD, {**PARAMS, "arguments": {"city": "Bergen", "nights": 2}}),
        (METHOD, {**PARAMS, "arguments": {"city": "Oslo", "nights": 2, "x": 1}}),
        (METHOD, None),
    ],
)
def test_a_state_for_another_request_is_refused(
    sealer: StateSealer, method: str, params: dict[str, Any] | None
) -> None:
    token = seal(sealer)
    assert refused(sealer, token, method=method, params=params).reason == "wrong_request"


def test_a_state_for_another_principal_is_refused(sealer: StateSealer) -> None:
    token = seal(sealer, principal="alice")
    assert sealer.open(token, method=METHOD, params=PARAMS, now=NOW, principal="alice") == STATE
    assert refused(sealer, token, principal="mallory").reason == "wrong_principal"
    assert refused(sealer, token, principal=None).reason == "wrong_principal"
    anonymous = seal(sealer)
    assert refused(sealer, anonymous, principal="alice").reason == "wrong_principal"


@pytest.mark.parametrize(
    "token",
    [None, 3, ["1.k1.x"], "", "junk", "1.k1", "2.k1.AAAA", "1.k1.!!!!", "1.k/1.AAAA", "1.k1.AAAA"],
)
def test_a_malformed_state_is_refused(sealer: StateSealer, token: object) -> None:
    assert refused(sealer, token).reason == "malformed"


def test_a_huge_state_is_refused_before_decoding(sealer: StateSealer) -> None:
    token = "1.k1." + "A" * MAX_TOKEN_LENGTH
    error = refused(sealer, token)
    assert error.reason == "too_large"
    assert len(error.message) < 200


# --- the digest and the keys ----------------------------------------------------------------


def test_the_digest_ignores_only_what_a_retry_changes() -> None:
    base = request_digest(METHOD, PARAMS)
    assert request_digest(METHOD, {"name": "book", "arguments": PARAMS["arguments"]}) == base
    reordered = {"arguments": {"nights": 2, "city": "Oslo"}, "name": "book"}
    assert request_digest(METHOD, reordered) == base
    assert request_digest(METHOD, {**PARAMS, "requestState": "x", "inputResponses": {}}) == base
    assert request_digest(METHOD, {**PARAMS, "name": "other"}) != base
    assert request_digest("resources/read", PARAMS) != base


def test_keys_are_checked_and_never_shown() -> None:
    key = SealingKey.generate("k")
    assert key.to_text() not in repr(key)
    assert repr(key) == "SealingKey('k')"
    with pytest.raises(ValueError, match="32 bytes"):
        SealingKey("k", b"short")
    with pytest.raises(ValueError, match="key id"):
        SealingKey("has space", bytes(32))
    with pytest.raises(ValueError, match="base64"):
        SealingKey.from_text("k", "not base64 at all!")
    with pytest.raises(ValueError, match="at least one"):
        KeyRing.of()
    with pytest.raises(ValueError, match="unique"):
        KeyRing.of(key, SealingKey.generate("k"))
    with pytest.raises(ValueError, match="positive"):
        StateSealer(KeyRing.of(key), ttl=0)
    standard = base64.b64encode(key.secret).decode()
    assert SealingKey.from_text("k", standard) == key
