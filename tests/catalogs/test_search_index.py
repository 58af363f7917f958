"""The keyword index on its own: operations read from plain English, stems, cost."""

from __future__ import annotations

import time

import pytest

from mcpactor.server._search_index import SearchIndex, tokenize
from mcpactor.server._search_intent import intent

# A small catalog of another shape than the generated one: a note-taking app's tools,
# named and described as people write them.
NOTES = [
    ("list_notes", "List the notes in a notebook, optionally filtered by tag."),
    ("get_note", "Get one note by its id, with its title, body and tags."),
    ("create_note", "Create a note in a notebook with a title, body and tags."),
    ("update_note", "Update a note's title, body or tags."),
    ("delete_note", "Delete a note from its notebook."),
    ("search_notebooks", "Search notebooks by name."),
    ("archive_notebook", "Archive a notebook so it no longer shows up."),
]


def index() -> SearchIndex:
    return SearchIndex(
        {
            "name": name,
            "description": text,
            "inputSchema": {"type": "object", "properties": {"note_id": {"type": "string"}}},
        }
        for name, text in NOTES
    )


@pytest.mark.parametrize(
    ("query", "operation"),
    [
        ("which notes mention the budget", "list"),
        ("what are my notes about travel", "list"),
        ("every note tagged urgent", "list"),
        ("take back the note I wrote yesterday", "delete"),
        ("get rid of that note", "delete"),
        ("undo the note", "delete"),
        ("rename a note", "update"),
        ("mark the note as done", "update"),
        ("set up a note for the meeting", "create"),
        ("jot down a new note", "create"),
        ("pull up the note about taxes", "get"),
        ("what is in this note", "get"),
    ],
)
def test_the_operation_a_request_asks_for(query: str, operation: str) -> None:
    weights, _ = intent(query)
    assert max(weights, key=lambda op: weights[op]) == operation
    # ... and the index ranks that operation's tool first among the note's siblings.
    expected = {"list": "list_notes", "delete": "delete_note", "update": "update_note"}
    expected |= {"create": "create_note", "get": "get_note"}
    assert index().search(query, limit=1) == [expected[operation]]


def test_no_cue_no_bias() -> None:
    assert intent("note") == ({}, frozenset())
    # Without a cue, the words alone decide: the notebook search, not a note tool.
    assert index().search("notebook by name", limit=1) == ["search_notebooks"]


def test_forms_of_a_word_meet_at_one_stem() -> None:
    assert len(set(tokenize("release releases released releasing"))) == 1
    assert tokenize("running run") == ["run", "run"]
    assert tokenize("boxes box addresses address") == ["box", "box", "address", "address"]
    assert tokenize("billing") == ["bill"]


def test_building_and_searching_stay_cheap() -> None:
    definitions = [
        {"name": f"{name}_{i}", "description": text} for i in range(700) for name, text in NOTES
    ]
    started = time.perf_counter()
    big = SearchIndex(definitions)
    built = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(20):
        big.search("which notes mention the budget and were taken back")
    searched = (time.perf_counter() - started) / 20
    print(f"4 900 tools: built in {built * 1000:.0f} ms, {searched * 1000:.1f} ms a search")
    # Generous bounds for a loaded machine; measured about 0.2 s and 2 ms.
    assert built < 5
    assert searched < 0.5
