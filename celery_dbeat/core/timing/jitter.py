"""Deterministic jitter: ``fire_at = slot + (H(schedule, slot) mod J)``, before the next slot.

``H`` is a hash of the schedule's identity (its ``uid``, kept through renames) and the slot, so
every beat computes the same instant, before and after restarts; the fire key and task id stay
(schedule, slot).
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta, timezone

__all__ = ["fire_at"]


def _micros(delta: timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def fire_at(
    uid: str, slot: datetime, jitter: timedelta | None, next_slot: datetime | None
) -> datetime:
    """When the fire of ``slot`` is due: ``slot`` plus its jitter, strictly before ``next_slot``.

    The window is ``jitter``, narrowed to the gap before the next slot, so offsets stay spread
    over the whole gap rather than piling up at a cap.
    """
    if not jitter:
        return slot
    window = _micros(jitter)
    if next_slot is not None:
        window = min(window, _micros(next_slot - slot))
    if window <= 1:
        return slot
    instant = slot.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    digest = hashlib.sha256(f"{uid}\x00{instant}".encode()).digest()
    return slot + timedelta(microseconds=int.from_bytes(digest[:8], "big") % window)
