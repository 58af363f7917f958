"""The registry of named HTTP sessions: MemorySessionStore."""

from __future__ import annotations

from typing import cast

from mcpactor.runtime.http import HttpSession, MemorySessionStore, SessionStore


class Named:
    def __init__(self, session_id: str | None) -> None:
        self.id = session_id


def session(session_id: str | None) -> HttpSession:
    return cast(HttpSession, Named(session_id))


def test_sessions_are_found_by_id_until_removed() -> None:
    store: SessionStore = MemorySessionStore()
    first = session(store.new_id())
    assert first.id is not None
    store.add(first)
    assert store.get(first.id) is first
    assert store.get("nobody") is None
    assert len(store) == 1
    store.remove(first)
    assert store.get(first.id) is None
    assert len(store) == 0


def test_removing_a_session_replaced_under_its_id_keeps_the_new_one() -> None:
    store = MemorySessionStore()
    old, new = session("same"), session("same")
    store.add(old)
    store.add(new)
    store.remove(old)
    assert store.get("same") is new
    store.remove(session(None))  # an unnamed session was never there
    assert len(store) == 1


def test_fresh_ids_are_unguessable_and_distinct() -> None:
    store = MemorySessionStore()
    ids = {store.new_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(len(session_id) >= 32 for session_id in ids)
