# Which operation a request asks for, read from general English cues.
#
# Most tools of a catalog come in families that differ only by their operation: list,
# get, create, update and delete of one kind of record. A request often says the record in
# words a description matches, and the operation in words it does not ("which positions
# are open" lists, "take back the like" deletes). Here each request gets a weight per
# operation class from cue words and phrases of everyday English (question words,
# plurals, phrasal verbs); the index gives each tool a class from the first of
# ``OPERATIONS``' verbs in its name (or, failing that, its description's first word).
# Nothing here knows any catalog's nouns.

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

__all__ = ["OPERATIONS", "intent"]

_WORD: Final = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: the verbs tool names use, by the operation class they belong to
OPERATIONS: Final[Mapping[str, frozenset[str]]] = {
    "list": _words("list lists search find browse enumerate query all"),
    "get": _words("get read show fetch retrieve describe view lookup inspect info"),
    "create": _words(
        "create add new make insert post register upload open start submit send "
        "issue book schedule generate invite"
    ),
    "update": _words(
        "update edit modify change set rename patch put move replace assign mark toggle "
        "enable disable"
    ),
    "delete": _words(
        "delete remove destroy erase drop discard purge cancel revoke archive close "
        "unsubscribe clear"
    ),
}

# Phrases first, left to right (they consume their words, so "get rid of" is not a "get"); a phrase
# written "a _ b" lets up to two words stand between a and b ("take it back").
_PHRASES: Final = (
    ("delete", 1.0, "take _ back"),
    ("delete", 1.0, "take _ out"),
    ("delete", 1.0, "take _ off"),
    ("delete", 1.0, "take _ down"),
    ("delete", 1.0, "get rid"),
    ("delete", 1.0, "do away"),
    ("delete", 1.0, "no longer"),
    ("delete", 1.0, "throw _ away"),
    ("create", 1.0, "set _ up"),
    ("create", 0.8, "sign _ up"),
    ("get", 1.0, "look _ up"),
    ("get", 1.0, "pull _ up"),
    ("get", 1.0, "find out"),
    ("get", 0.8, "what is"),
    ("get", 0.8, "what's"),
    ("get", 0.8, "when does"),
    ("get", 0.8, "when is"),
    ("get", 0.8, "how long"),
    ("get", 0.8, "how much"),
    ("get", 0.8, "does it"),
    ("get", 0.8, "is it"),
    ("list", 1.0, "what are"),
    ("list", 1.0, "what're"),
    ("list", 1.0, "how many"),
    ("list", 1.0, "are there"),
    ("update", 1.0, "mark _ as"),
    ("update", 1.0, "turn _ on"),
    ("update", 1.0, "turn _ off"),
    ("update", 0.8, "switch _ to"),
)

_PHRASES_BY_FIRST: Final = {
    first: [
        (op, strength, phrase.split())
        for op, strength, phrase in _PHRASES
        if phrase.split()[0] == first
    ]
    for first in {phrase.split()[0] for _, _, phrase in _PHRASES}
}

# Single cue words of requests: operation and strength.
_WORDS: Final[Mapping[str, tuple[str, float]]] = {
    **dict.fromkeys(
        _words(
            "delete remove erase destroy drop discard purge cancel revoke withdraw undo "
            "retract unsubscribe unfollow dismiss trash wipe terminate scrap ditch rescind "
            "abandon deleted removed cancelled canceled"
        ),
        ("delete", 1.0),
    ),
    **dict.fromkeys(
        _words(
            "update change edit modify alter rename set adjust fix correct amend tweak "
            "reschedule postpone reassign replace toggle switch mark move extend raise lower "
            "increase decrease bump revise"
        ),
        ("update", 1.0),
    ),
    **dict.fromkeys(
        _words(
            "create add new make register insert upload post submit book reserve schedule "
            "file log draft compose invite open start launch generate issue place"
        ),
        ("create", 1.0),
    ),
    **dict.fromkeys(
        _words("get fetch retrieve read inspect describe details detail lookup"), ("get", 1.0)
    ),
    **dict.fromkeys(_words("show view see display check one this its single"), ("get", 0.6)),
    **dict.fromkeys(
        _words("list which all every browse enumerate search find recent recently latest"),
        ("list", 1.0),
    ),
    **dict.fromkeys(_words("any many each"), ("list", 0.6)),
}
# Each cue after the first counts this much of the one before.
_LATER: Final = 0.8
# A plural noun suggests a list; weaker than a word that says so.
_PLURAL_WEIGHT: Final = 0.6
_NOT_PLURAL: Final = _words(
    "is was has does this its his us yes always sometimes perhaps plus across series "
    "news status address access process business analysis class less unless"
)


def _match(words: list[str], start: int, pattern: list[str]) -> int:
    """The index past the match of ``pattern`` at ``start``, or -1."""
    at = start
    for i, part in enumerate(pattern):
        if part == "_":
            continue
        if i and pattern[i - 1] == "_":
            for gap in range(3):
                if at + gap < len(words) and words[at + gap] == part:
                    at += gap + 1
                    break
            else:
                return -1
        elif at < len(words) and words[at] == part:
            at += 1
        else:
            return -1
    return at


def intent(query: str) -> tuple[dict[str, float], frozenset[str]]:
    """The weight (0 to 1) of each operation ``query`` asks for, and its phrases' particles.

    The particles ("pull up", "get rid of") say the operation, not what it is done to:
    the index leaves them out of the words it matches.
    """
    words = _WORD.findall(query.lower())
    used = [False] * len(words)
    particles: set[str] = set()
    cues: list[tuple[int, str, float]] = []

    def cue(at: int, op: str, strength: float) -> None:
        cues.append((at, op, strength))

    for start, first in enumerate(words):
        for op, strength, pattern in _PHRASES_BY_FIRST.get(first, ()):
            end = _match(words, start, pattern)
            if end > 0 and not any(used[start:end]):
                cue(start, op, strength)
                for i in range(start, end):
                    if words[i] in pattern:
                        used[i] = True
                        # The phrase's verb goes too ("get" of "get rid of" is no get),
                        # unless alone it says the same ("mark" of "mark as read").
                        if words[i] != pattern[0] or _WORDS.get(words[i], ("",))[0] != op:
                            particles.add(words[i])
    for i, word in enumerate(words):
        if used[i]:
            continue
        if word in _WORDS:
            cue(i, *_WORDS[word])
        elif (
            len(word) > 3
            and word.endswith("s")
            and not word.endswith(("ss", "us", "is", "'s"))
            and word not in _NOT_PLURAL
        ):
            cue(i, "list", _PLURAL_WEIGHT)
    # A request leads with what it wants done: each later cue counts a little less.
    weights: dict[str, float] = {}
    for rank, (_, op, strength) in enumerate(sorted(cues)):
        weights[op] = max(weights.get(op, 0.0), strength * _LATER**rank)
    return weights, frozenset(particles)
