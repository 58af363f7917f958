"""``--workers`` with sessions: allowed once the workers share a store, each a replica."""

from __future__ import annotations

import os

import pytest

from mcpactor.cli._workers import replica_id, workers_refusal
from mcpactor.runtime.http import Relayed, RelayKind


@pytest.mark.parametrize(
    ("workers", "stateless", "store", "refused"),
    [
        (1, False, None, False),
        (2, True, None, False),
        (2, False, "redis://127.0.0.1:6379/0", False),
        (2, True, "redis://127.0.0.1:6379/0", False),
        (2, False, None, True),
    ],
)
def test_workers_need_stateless_or_a_store(
    workers: int, stateless: bool, store: str | None, refused: bool
) -> None:
    refusal = workers_refusal(workers, stateless=stateless, store=store)
    assert (refusal is not None) is refused
    if refusal is not None:
        assert refusal.startswith("--workers needs --stateless or --store")


def test_replica_ids_name_the_process_and_differ_between_calls() -> None:
    first, second = replica_id(), replica_id()
    assert first != second
    assert f":{os.getpid()}:" in first
    # Short enough to name the origin of a relayed message.
    message = Relayed(RelayKind.CLOSED, "s", first)
    assert Relayed.decode(message.encode()).origin == first
