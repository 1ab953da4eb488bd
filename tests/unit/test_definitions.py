"""What :meth:`Definition.create` refuses in a schedule's name and task, as every surface does."""

from __future__ import annotations

import pytest

from celery_dbeat import Every
from celery_dbeat.core.definitions import Definition
from celery_dbeat.core.errors import ValidationError


@pytest.mark.parametrize("field", ["name", "task"])
@pytest.mark.parametrize(
    ("text", "code", "position"),
    [
        pytest.param("report\n", "U+000A", 6, id="newline"),
        pytest.param("re\tport", "U+0009", 2, id="tab"),
        pytest.param("\x1b[31mreport", "U+001B", 0, id="terminal-escape"),
        pytest.param("report\x00", "U+0000", 6, id="nul"),
        pytest.param("report\x7f", "U+007F", 6, id="delete"),
        pytest.param("report\x85", "U+0085", 6, id="c1-next-line"),
        pytest.param("report\u2028x", "U+2028", 6, id="line-separator"),
        pytest.param("tro\u202ejan", "U+202E", 3, id="right-to-left-override"),
        pytest.param("\u2066report\u2069", "U+2066", 0, id="bidi-isolate"),
    ],
)
def test_a_control_character_is_refused_naming_it_and_where_it_is(
    field: str, text: str, code: str, position: int
) -> None:
    name, task = (text, "proj.tasks.report") if field == "name" else ("report", text)

    with pytest.raises(ValidationError) as caught:
        Definition.create(name=name, task=task, schedule=Every(60))

    assert caught.value.field == field
    assert f"contains the control character {code} " in str(caught.value)
    assert f"at position {position}; remove it" in str(caught.value)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("Grüße an München", id="accents-and-a-space"),
        pytest.param("日次レポート", id="cjk"),
        pytest.param("report 👩‍💻", id="emoji-with-a-zero-width-joiner"),
        pytest.param("rapport-été_v2.1", id="punctuation"),
    ],
)
def test_printable_unicode_names_are_accepted(name: str) -> None:
    assert Definition.create(name=name, task="proj.tasks.r", schedule=Every(60)).name == name


@pytest.mark.parametrize(
    ("text", "code", "position"),
    [
        pytest.param("re\u200bport", "U+200B", 2, id="zero-width-space"),
        pytest.param("report\u00ad", "U+00AD", 6, id="soft-hyphen"),
        pytest.param("\ufeffreport", "U+FEFF", 0, id="byte-order-mark"),
        pytest.param("rep\u2060ort", "U+2060", 3, id="word-joiner"),
        pytest.param("re\u200dport", "U+200D", 2, id="joiner-between-letters"),
    ],
)
def test_an_invisible_character_in_a_name_is_refused_as_two_names_would_look_the_same(
    text: str, code: str, position: int
) -> None:
    with pytest.raises(ValidationError) as caught:
        Definition.create(name=text, task="proj.tasks.report", schedule=Every(60))

    assert caught.value.field == "name"
    assert f"contains the invisible character {code} at position {position}; remove it" in str(
        caught.value
    ).replace(f" ({text[position]!r})", "")
