"""What free text people type may hold: no control characters.

One rule for every text that ends in a log line, a table, a terminal or a message header: a
schedule's name, task and calendar, a pause note, a calendar's description, the routing options
(``queue``, ``exchange``, ``routing_key``, ``shadow``), header names and text header values, and
the audit trail's actor. A name, by which people tell one thing from another, holds no invisible
character either (``U+200B`` zero width space, ``U+00AD`` soft hyphen: Unicode's "format"
characters), else two different names look the same.
"""

from __future__ import annotations

import unicodedata

from .errors import ValidationError

__all__ = ["escaped", "refuse_control_characters", "unprintable"]

#: The bidirectional overrides and isolates: they make text display in another order than it is
#: stored, so two different names look alike.
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
#: The zero width joiner, allowed in a name between two symbols only (:func:`_joins_symbols`).
_JOINER = "\u200d"


def unprintable(text: str, *, name: bool = False) -> tuple[int, str] | None:
    """The position and character of the first character ``text`` may not hold, or ``None``:
    control characters (C0, DEL, C1: ``\\n``, ``\\t``, ``\\x1b``...), line and paragraph
    separators and the bidirectional controls. Each breaks a log line, a table or a terminal,
    or makes two different texts look alike. With ``name``, every invisible ("format", ``Cf``)
    character too."""
    refused = ("Cc", "Zl", "Zp", "Cf") if name else ("Cc", "Zl", "Zp")
    for position, char in enumerate(text):
        joins = char == _JOINER and _joins_symbols(text, position)
        if (unicodedata.category(char) in refused or char in _BIDI_CONTROLS) and not joins:
            return position, char
    return None


def _joins_symbols(text: str, position: int) -> bool:
    """Whether the zero width joiner at ``position`` joins two symbols (an emoji sequence such
    as 👩‍💻, which it draws as one), not two letters (which it leaves looking as without it)."""
    before, after = text[position - 1 : position], text[position + 1 : position + 2]
    return all(c and unicodedata.category(c) == "So" for c in (before, after))


def refuse_control_characters(
    field: str, text: str, where: str = "", *, name: bool = False
) -> None:
    """Raise :class:`ValidationError` naming ``field`` and showing ``text`` escaped when it holds
    a character :func:`unprintable` finds (with ``name``: for a name), saying which and where.
    ``where``: which part of the field ``text`` is, for a field that holds several (``"the name
    of a header"``)."""
    found = unprintable(text, name=name)
    if found is None:
        return
    position, char = found
    part = f"{where} " if where else ""
    invisible = unicodedata.category(char) == "Cf" and char not in _BIDI_CONTROLS
    kind = "invisible" if invisible else "control"
    raise ValidationError(
        field,
        text,
        f"{part}contains the {kind} character U+{ord(char):04X} ({char!r}) at position "
        f"{position}; remove it",
    )


def escaped(text: str) -> str:
    """``text`` with each character :func:`unprintable` finds written as its Python escape
    (``\\x1b``, ``\\u202e``): how a terminal shows text stored before such characters were
    refused, or written into a table by hand, without obeying it."""
    return "".join(repr(char)[1:-1] if unprintable(char) else char for char in text)
