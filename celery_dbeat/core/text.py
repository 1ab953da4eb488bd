"""What free text people type may hold: no control characters.

One rule for every text that ends in a log line, a table, a terminal or a message header: a
schedule's name, task and calendar, a pause note, the routing options (``queue``, ``exchange``,
``routing_key``, ``shadow``), header names and text header values, and the audit trail's actor.
"""

from __future__ import annotations

import unicodedata

from .errors import ValidationError

__all__ = ["refuse_control_characters", "unprintable"]

#: The bidirectional overrides and isolates: they make text display in another order than it is
#: stored, so two different names look alike.
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def unprintable(text: str) -> tuple[int, str] | None:
    """The position and character of the first character ``text`` may not hold, or ``None``:
    control characters (C0, DEL, C1: ``\\n``, ``\\t``, ``\\x1b``...), line and paragraph
    separators and the bidirectional controls. Each breaks a log line, a table or a terminal,
    or makes two different texts look alike."""
    for position, char in enumerate(text):
        if unicodedata.category(char) in ("Cc", "Zl", "Zp") or char in _BIDI_CONTROLS:
            return position, char
    return None


def refuse_control_characters(field: str, text: str, where: str = "") -> None:
    """Raise :class:`ValidationError` naming ``field`` and showing ``text`` escaped when it holds
    a character :func:`unprintable` finds, saying which and where. ``where``: which part of the
    field ``text`` is, for a field that holds several (``"the name of a header"``)."""
    found = unprintable(text)
    if found is None:
        return
    position, char = found
    part = f"{where} " if where else ""
    raise ValidationError(
        field,
        text,
        f"{part}contains the control character U+{ord(char):04X} ({char!r}) at position "
        f"{position}; remove it",
    )
