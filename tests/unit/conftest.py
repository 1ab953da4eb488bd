"""What the unit tests share: instants written as text, for their tables of cases.

Unit tests are pure (no database, broker or Redis); they have no fixtures of their own.
"""

from __future__ import annotations

from datetime import datetime, timezone

UTC = timezone.utc


def utc(text: str) -> datetime:
    """``"2024-03-10T07:00Z"`` (or with seconds/microseconds) as an aware UTC datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def utcs(*texts: str) -> list[datetime]:
    return [utc(t) for t in texts]


def at(hhmm: str, day: int = 1) -> datetime:
    """``"13:10"`` or ``"13:10:00.5"`` on 2024-01-``day`` in UTC."""
    return datetime.fromisoformat(f"2024-01-{day:02d}T{hhmm}+00:00")
