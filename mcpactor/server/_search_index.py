# A keyword index over tool definitions, for the search mode of large catalogs.
#
# BM25F, written here: no model, no network. Each tool is a document of four fields
# (its name, its title and description, its argument names, its argument descriptions),
# each with its own weight; names are split where snake_case, camelCase and kebab-case
# join words, words are lower-cased and cut to a crude stem, and a query word also
# matches a few common synonyms (``remove`` finds ``delete``) at a lower weight. Tools of
# the operation a request asks for in plain English (``_search_intent``) are lifted above
# their siblings. The index is built once from a list of definitions; the search mode
# builds a new one when the server's tools change, never per call.

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from mcpactor.server._search_intent import OPERATIONS, intent

__all__ = ["SearchIndex", "tokenize"]

_WORD: Final = re.compile(r"[A-Za-z0-9]+")
# Where camelCase joins words: "getUserID" -> get, User, ID.
_CAMEL: Final = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

_STOP: Final = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "i",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "please",
        "so",
        "that",
        "the",
        "their",
        "them",
        "then",
        "this",
        "to",
        "was",
        "we",
        "what",
        "when",
        "which",
        "with",
        "you",
        "your",
        "can",
        "could",
        "would",
        "should",
        "will",
        "do",
        "does",
        "how",
        "some",
        "any",
        "all",
    ]
)

# Words a description and a request often use for one another (each group's words match
# each other). Small and general on purpose: verbs of every API, not one domain's terms.
_SYNONYM_GROUPS: Final = (
    # the verbs of create, read, update and delete, as requests phrase them
    "create add new make register open insert upload post issue place book reserve "
    "schedule write submit send setup",
    "get fetch retrieve read show view look lookup detail see check track inspect",
    "list enumerate browse all index",
    "update modify change edit set alter rename adjust fix correct",
    "delete remove erase destroy drop discard purge cancel revoke",
    "search find query locate",
    "user account member person people",
    "file document doc",
    "picture image photo",
    "start begin launch run trigger",
    "approve accept confirm",
    "reject decline deny",
    "copy duplicate clone",
    "move transfer",
    "count total number",
)

#: how much each field of a definition counts
FIELD_WEIGHTS: Final = {"name": 3.0, "text": 1.0, "arg_names": 1.5, "arg_text": 0.5}
# BM25's term-frequency saturation and length normalisation.
_K1: Final = 1.2
_B: Final = 0.5
# A synonym's match counts this much of the word's own.
_SYNONYM_WEIGHT: Final = 0.5
# A tool of the operation a request asks for scores up to this much more.
_INTENT_BOOST: Final = 0.5
#: a query longer than this is cut before it is tokenized (what came off the wire)
MAX_QUERY_CHARS: Final = 1000


def _stem(word: str) -> str:
    # Enough to let plural and tense forms meet; not a linguist's stemmer. A final "e"
    # goes too, so that "release", "releases" and "released" meet at "releas".
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 5 and word.endswith("ing"):
        word = _undouble(word[:-3])
    elif len(word) > 4 and word.endswith("ied"):
        return word[:-3] + "y"
    elif len(word) > 4 and word.endswith("ed") and not word.endswith("eed"):
        word = _undouble(word[:-2])
    elif len(word) > 4 and word.endswith(("sses", "xes", "zes", "ches", "shes")):
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if len(word) > 3 and word.endswith("e") and not word.endswith("ee"):
        word = word[:-1]
    return word


def _undouble(word: str) -> str:
    # "running" -> "runn" -> "run"; "billing" keeps its "ll", "missing" its "ss".
    if len(word) > 2 and word[-1] == word[-2] and word[-1] not in "lsz":
        return word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """The index terms of ``text``: words split at case and punctuation, stemmed."""
    terms: list[str] = []
    for chunk in _WORD.findall(text):
        for part in _CAMEL.findall(chunk) or [chunk]:
            word = part.lower()
            if word not in _STOP:
                terms.append(_stem(word))
    return terms


def _synonyms() -> dict[str, tuple[str, ...]]:
    table: dict[str, set[str]] = {}
    for group in _SYNONYM_GROUPS:
        stems = {_stem(word) for word in group.split()}
        for stem in stems:
            table.setdefault(stem, set()).update(stems - {stem})
    return {stem: tuple(sorted(others)) for stem, others in table.items()}


_SYNONYMS: Final = _synonyms()


# the stem of each verb tool names use -> its operation class
_VERB_CLASS: Final = {_stem(verb): op for op, verbs in OPERATIONS.items() for verb in verbs}


def _operation(name: list[str], text: list[str]) -> str | None:
    # A tool's operation: its name's first verb of a class, else its description's first word.
    for term in name:
        if term in _VERB_CLASS:
            return _VERB_CLASS[term]
    return _VERB_CLASS.get(text[0]) if text else None


def _fields(definition: Mapping[str, Any]) -> dict[str, list[str]]:
    name = str(definition.get("name", ""))
    text = f"{definition.get('title') or ''} {definition.get('description') or ''}"
    arg_names: list[str] = []
    arg_text: list[str] = []
    schema = definition.get("inputSchema")
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if isinstance(properties, Mapping):
        for arg, spec in properties.items():
            arg_names.append(str(arg))
            if isinstance(spec, Mapping):
                arg_text.append(str(spec.get("description") or spec.get("title") or ""))
    return {
        "name": tokenize(name),
        "text": tokenize(text),
        "arg_names": tokenize(" ".join(arg_names)),
        "arg_text": tokenize(" ".join(arg_text)),
    }


class SearchIndex:
    """A BM25F index over tool definitions (``name``, ``description``, ``inputSchema``)."""

    def __init__(self, definitions: Iterable[Mapping[str, Any]]) -> None:
        #: the names indexed, by document number
        self.names: list[str] = []
        # term -> [(document, weighted term frequency)]
        self._postings: dict[str, list[tuple[int, float]]] = {}
        # document -> its operation class (list, get, create, update, delete) or None
        self._operations: list[str | None] = []
        lengths: list[float] = []
        for number, definition in enumerate(definitions):
            self.names.append(str(definition.get("name", "")))
            weighted: dict[str, float] = {}
            length = 0.0
            fields = _fields(definition)
            self._operations.append(_operation(fields["name"], fields["text"]))
            for field, terms in fields.items():
                weight = FIELD_WEIGHTS[field]
                length += weight * len(terms)
                for term in terms:
                    weighted[term] = weighted.get(term, 0.0) + weight
            lengths.append(length)
            for term, frequency in weighted.items():
                self._postings.setdefault(term, []).append((number, frequency))
        self._lengths = lengths
        self._average = (sum(lengths) / len(lengths)) if lengths else 1.0

    def __len__(self) -> int:
        return len(self.names)

    def _idf(self, term: str) -> float:
        n = len(self._postings.get(term, ()))
        return math.log(1 + (len(self.names) - n + 0.5) / (n + 0.5))

    def scores(self, query: str) -> dict[int, float]:
        """Each matching document's score for ``query`` (documents by number)."""
        weights: dict[str, float] = {}
        query = query[:MAX_QUERY_CHARS]
        wanted, particles = intent(query)
        for term in tokenize(query):
            if term in particles:
                continue
            weights[term] = weights.get(term, 0.0) + 1.0
            for other in _SYNONYMS.get(term, ()):
                weights[other] = max(weights.get(other, 0.0), _SYNONYM_WEIGHT)
        scores: dict[int, float] = {}
        average = self._average or 1.0
        for term, query_weight in weights.items():
            postings = self._postings.get(term)
            if not postings:
                continue
            idf = self._idf(term) * query_weight
            for number, frequency in postings:
                norm = _K1 * (1 - _B + _B * self._lengths[number] / average)
                gain = idf * frequency * (_K1 + 1) / (frequency + norm)
                scores[number] = scores.get(number, 0.0) + gain
        # Tools of the operation the request asks for rank above their siblings.
        if wanted:
            for number in scores:
                operation = self._operations[number]
                if operation is not None:
                    scores[number] *= 1 + _INTENT_BOOST * wanted.get(operation, 0.0)
        return scores

    def search(self, query: str, limit: int = 5) -> Sequence[str]:
        """The names of the ``limit`` best matches for ``query``, best first."""
        ranked = sorted(self.scores(query).items(), key=lambda item: (-item[1], item[0]))
        return [self.names[number] for number, _ in ranked[:limit]]
