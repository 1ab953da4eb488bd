"""How values are written for people, on every surface: instants and durations."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import overload

__all__ = ["iso", "parse_instant", "seconds_text"]


@overload
def iso(value: datetime) -> str: ...
@overload
def iso(value: None) -> None: ...
@overload
def iso(value: datetime | None) -> str | None: ...
def iso(value: datetime | None) -> str | None:
    """An instant as ISO-8601 in UTC with ``Z`` (microseconds only when there are some)."""
    if value is None:
        return None
    value = value.astimezone(timezone.utc)
    spec = "seconds" if value.microsecond == 0 else "microseconds"
    return value.replace(tzinfo=None).isoformat(timespec=spec) + "Z"


def parse_instant(text: str) -> datetime:
    """An ISO-8601 instant with an offset (``Z`` allowed), as typed on the CLI or in a form, as
    an aware datetime; ``ValueError`` saying what to write instead."""
    try:
        parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"{text!r} is not an ISO-8601 instant such as 2024-03-09T00:00:00Z"
        ) from None
    if parsed.tzinfo is None:
        raise ValueError(f"{text!r} needs a time zone offset, e.g. +00:00 or Z")
    return parsed


def seconds_text(seconds: float | None) -> str | None:
    """``5400`` -> ``1h30m``; ``30`` -> ``30s``; ``0.25`` -> ``0.25s``."""
    if seconds is None:
        return None
    if seconds < 0:
        return "-" + (seconds_text(-seconds) or "")
    whole = int(seconds)
    rest = seconds - whole
    parts = []
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if whole >= size:
            parts.append(f"{whole // size}{unit}")
            whole %= size
    if whole or rest or not parts:
        parts.append(f"{whole + rest:g}s")
    return "".join(parts)
