"""The note of a pause made by ``pause_after_failures`` is always a note a person could have
typed: one line, at most 500 characters, no control characters."""

from __future__ import annotations

import pytest

from celery_dbeat.core.definitions import MAX_PAUSE_NOTE, failure_note, pause_note

NOTES = [
    pytest.param(3, None, "paused after 3 consecutive failed runs", id="no-error"),
    pytest.param(
        3,
        "ValueError: boom",
        "paused after 3 consecutive failed runs; last: ValueError: boom",
        id="error",
    ),
    pytest.param(
        1,
        "\n  KeyError: 'x'\nTraceback (most recent call last):\n  ...",
        "paused after 1 consecutive failed runs; last: KeyError: 'x'",
        id="first-non-blank-line",
    ),
    pytest.param(
        2,
        "OSError: a\tb\x1b[31m\u202e",
        "paused after 2 consecutive failed runs; last: OSError: a b [31m ",
        id="control-characters",
    ),
]


@pytest.mark.parametrize(("failures", "error", "note"), NOTES)
def test_a_failure_note_names_the_count_and_the_last_errors_first_line(
    failures: int, error: str | None, note: str
) -> None:
    assert failure_note(failures, error) == note
    assert pause_note(note) == note


def test_a_long_error_is_shortened_to_fit_a_note() -> None:
    note = failure_note(1000, "RuntimeError: " + "x" * 2000)
    assert len(note) == MAX_PAUSE_NOTE
    assert note.endswith("xxx...")
    assert pause_note(note) == note
