# The sealing keys of multi round-trip requests, from configuration.
#
# A ``requestState`` sealed by one process opens on another only if both hold its key,
# so the keys are deployment configuration, like a TLS key: a file with one base64 key
# per line (``--state-key-file``, ``[stateless] state_keys_file``) or the same lines in
# ``MCPACTOR_STATE_KEYS``. The first key seals, every key opens: rotation is adding a
# new first line and dropping the last one later. Blank lines and ``#`` comments are
# skipped. A key's id, sent in the clear in each state, is derived from the key itself,
# so every process reading the same key gives it the same id without naming it.

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final

from .._exceptions import ConfigError

if TYPE_CHECKING:
    # The sealer's classes load with the first key read: most servers configure none.
    from ..protocol import KeyRing, StateSealer

__all__ = ["STATE_KEYS_ENV", "parse_state_keys", "read_state_keys", "state_sealer"]

#: the environment variable that may hold the keys themselves (the file's lines)
STATE_KEYS_ENV: Final = "MCPACTOR_STATE_KEYS"


def parse_state_keys(text: str, *, source: str) -> KeyRing:
    """The key ring the lines of ``text`` give (``source`` names them in errors).

    Raises:
        ConfigError: a line is not the base64 of 32 bytes, or there is no key at all.
    """
    from ..protocol import KeyRing, SealingKey

    keys: list[SealingKey] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            probe = SealingKey.from_text("probe", line)
        except ValueError:
            raise ConfigError(
                f"{source}, line {number}: not a state key (the base64 of 32 random bytes)"
            ) from None
        key_id = "k" + hashlib.sha256(probe.secret).hexdigest()[:12]
        if key_id in seen:
            raise ConfigError(f"{source}, line {number}: the same key is listed twice")
        seen.add(key_id)
        keys.append(SealingKey(key_id, probe.secret))
    if not keys:
        raise ConfigError(f"{source} holds no state key (one base64 key per line)")
    return KeyRing(tuple(keys))


def read_state_keys(path: str | os.PathLike[str]) -> KeyRing:
    """The key ring of a key file.

    Raises:
        ConfigError: the file cannot be read or holds no valid keys.
    """
    try:
        text = Path(path).read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the state key file {os.fspath(path)!r}: {exc}") from None
    return parse_state_keys(text, source=os.fspath(path))


def state_sealer(
    key_file: str | os.PathLike[str] | None, environ: Mapping[str, str] = os.environ
) -> StateSealer | None:
    """The sealer configuration names: ``key_file``, else the environment; or None.

    Raises:
        ConfigError: the keys named cannot be read.
    """
    inline = environ.get(STATE_KEYS_ENV) if key_file is None else None
    if key_file is None and not inline:
        return None
    from ..protocol import StateSealer

    if key_file is not None:
        return StateSealer(read_state_keys(key_file))
    assert inline is not None
    # The variable may separate keys by newlines, commas or spaces.
    lines = "\n".join(inline.replace(",", " ").split())
    return StateSealer(parse_state_keys(lines, source=STATE_KEYS_ENV))
