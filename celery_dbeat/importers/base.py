"""What an importer returns: one :class:`Imported` per source entry, in a :class:`SourceRead`.

An entry is exactly one of: imported (``definition`` set), ``skipped`` (it is not the user's to
import, e.g. the scheduler's own ``celery.backend_cleanup``; not an error) or ``refused``
(celery-dbeat cannot represent it; the reason names what and says what to do). Building a
definition goes through :meth:`~celery_dbeat.core.definitions.Definition.create`, so an imported
entry is one every other surface would accept, and one that fails validation is refused with the
same message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Any

from ..core.definitions import Definition
from ..core.errors import DBeatError, ValidationError

__all__ = ["Imported", "SourceRead", "SourceUnavailable", "aware", "build"]

UTC = timezone.utc


class SourceUnavailable(DBeatError):
    """The source cannot be read: unreachable, or not holding that scheduler's data."""


@dataclass(frozen=True)
class Imported:
    """One entry of the source: what it becomes in celery-dbeat, or why it does not."""

    name: str
    definition: Definition | None = None
    skipped: str | None = None
    refused: str | None = None
    #: When the source would have fired it next (``None``: never, e.g. disabled or ended); an
    #: instant at or before the import means the source owes a fire (its beat is down or behind).
    source_next: datetime | None = None
    #: Things worth knowing that do not stop the import (a field with no celery-dbeat equivalent).
    notes: tuple[str, ...] = ()

    @classmethod
    def refuse(cls, name: str, reason: str) -> Imported:
        return cls(name, refused=reason)

    @classmethod
    def skip(cls, name: str, reason: str) -> Imported:
        return cls(name, skipped=reason)


@dataclass(frozen=True)
class SourceRead:
    """Everything read from one source."""

    #: Where the entries were read, for the report (passwords masked).
    source: str
    entries: list[Imported]
    #: Findings about the source as a whole (e.g. its beat still runs).
    warnings: list[str] = field(default_factory=list)


def build(
    name: str,
    what: str,
    *,
    source_next: datetime | None,
    notes: Sequence[str] = (),
    **fields: Any,
) -> Imported:
    """An imported entry, or a refused one naming ``what`` (the source's spec) and the field
    :meth:`Definition.create` refused."""
    try:
        definition = Definition.create(name=name, **fields)
    except ValidationError as exc:
        return Imported.refuse(name, f"{what}: {exc}")
    return Imported(name, definition, source_next=source_next, notes=tuple(notes))


def aware(value: Any, naive_zone: tzinfo = UTC) -> datetime | None:
    """An instant read from a source: aware values as they are, naive ones in ``naive_zone``
    (SQLite may hand back text)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    if not isinstance(value, datetime):
        raise ValueError(f"{value!r} is not a timestamp")
    if value.tzinfo is None or value.utcoffset() is None:
        return value.replace(tzinfo=naive_zone)
    return value


#: One microsecond: turns an exclusive bound ("no fire at or after") into celery-dbeat's
#: inclusive ``end_at``.
MICROSECOND = timedelta(microseconds=1)
