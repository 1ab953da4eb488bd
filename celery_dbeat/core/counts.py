"""How many entries one call of the API may ask for (slots previewed, audit entries read): a
whole number from 1 to :data:`MAX_COUNT`, checked here for every caller."""

from __future__ import annotations

from .errors import ValidationError

__all__ = ["MAX_COUNT", "require_count"]

MAX_COUNT = 10_000


def require_count(count: int) -> int:
    """``count``, or :class:`ValidationError` unless it is a whole number from 1 to
    :data:`MAX_COUNT` (``True`` is refused: it is no count)."""
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
        raise ValidationError("count", count, f"must be a whole number from 1 to {MAX_COUNT}")
    return count
