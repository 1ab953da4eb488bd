"""Beats' heartbeats: one row per running beat, written at most once per ``max_interval``,
removed on a clean stop; the rows are also how beats know for how long beats were running."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine, Row

from .models import B

__all__ = ["beat_heartbeats", "forget_beat", "heartbeat"]

#: Heartbeat rows older than this are deleted by any beat (a beat killed without a clean stop).
_FORGET_BEATS_AFTER = timedelta(days=1)


def heartbeat(
    engine: Engine, beat: Mapping[str, Any], now: datetime
) -> list[tuple[datetime, datetime]]:
    with engine.begin() as conn:
        done = conn.execute(
            sa.update(B).where(B.c.name == beat["name"]).values(**beat, last_seen_at=now)
        )
        if done.rowcount == 0:
            try:
                with conn.begin_nested():
                    conn.execute(sa.insert(B), [dict(beat, last_seen_at=now)])
            except sa.exc.IntegrityError:
                pass  # a namesake beat inserted it; its next heartbeat and ours will update
        conn.execute(sa.delete(B).where(B.c.last_seen_at < now - _FORGET_BEATS_AFTER))
        lifetimes = conn.execute(sa.select(B.c.started_at, B.c.last_seen_at)).all()
    return [(started, seen) for started, seen in lifetimes]


def forget_beat(engine: Engine, name: str) -> None:
    with engine.begin() as conn:
        conn.execute(sa.delete(B).where(B.c.name == name))


def beat_heartbeats(conn: Connection) -> list[Row[Any]]:
    return list(conn.execute(sa.select(B).order_by(B.c.name)))
