"""The edges an operator meets rarely, measured in-process on PostgreSQL (no beat processes).

* ``sync``: a ``beat_schedule`` of N interval entries synced as beat does at start-up: first
  (every row created), again unchanged (what every later start does), then with half removed.
* ``catchup``: N schedules (half per-second crons, half per-minute intervals) 30 days behind,
  one tick of a :class:`~celery_dbeat.ticker.Ticker` under each misfire policy, publishing to a
  stand-in: how long the tick takes and how many fires it sends.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from bench.services import Run
from celery_dbeat import Cron, Every
from celery_dbeat.clock import FixedClock
from celery_dbeat.config import Settings
from celery_dbeat.definitions import Definition
from celery_dbeat.locks import DatabaseLock
from celery_dbeat.store import Store, migrate
from celery_dbeat.store.sync import sync_config
from celery_dbeat.ticker import Ticker

NOW = datetime(2026, 1, 31, tzinfo=timezone.utc)


def _timed(call: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = call()
    return time.perf_counter() - started, result


def sync(workdir: Path, n: int) -> dict[str, Any]:
    run = Run(workdir, "sync")
    try:
        store = Store(run.database_url, server_clock=False)
        migrate(store.engine)
        entries = [Definition.create(name=f"e{i}", task="t", schedule=Every(60)) for i in range(n)]
        first, _ = _timed(lambda: sync_config(store, entries, NOW))
        again, report = _timed(lambda: sync_config(store, entries, NOW + timedelta(minutes=1)))
        assert len(report.unchanged) == n
        half, report = _timed(lambda: sync_config(store, entries[: n // 2], NOW))
        assert len(report.disabled) == n - n // 2
        store.close()
        row = {"scenario": "sync", "n": n, "first_s": first, "again_s": again, "half_s": half}
    finally:
        run.close()
    print(row)
    return row


def catchup(workdir: Path, n: int, policy: str) -> dict[str, Any]:
    run = Run(workdir, f"catchup-{policy}")
    try:
        store = Store(run.database_url, server_clock=False)
        migrate(store.engine)
        entries = [
            Definition.create(
                name=f"s{i}",
                task="t",
                schedule=Cron("* * * * * *") if i % 2 else Every(60),
                misfire_policy=policy,
            )
            for i in range(n)
        ]
        sync_config(store, entries, NOW - timedelta(days=30))
        sent: list[Any] = []
        settings = Settings.from_mapping({"instance_name": "bench", "misfire_tolerance": 0})
        ticker = Ticker(
            store, DatabaseLock(), lambda r, *_: sent.append(r), settings, FixedClock(NOW)
        )
        tick_s, _ = _timed(ticker.tick)
        store.close()
        row = {
            "scenario": "catchup",
            "n": n,
            "policy": policy,
            "tick_s": tick_s,
            "fires": len(sent),
        }
    finally:
        run.close()
    print(row)
    return row
