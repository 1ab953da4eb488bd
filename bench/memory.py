"""The memory scenario: a beat's RSS over N schedules, after start-up and after firing them all.

``source`` says where the N schedules come from: ``stored`` (daily intervals through
``Schedules.add_many`` before the beat starts, nothing in ``beat_schedule``), ``config`` (N
daily crontab entries in the app's ``beat_schedule``, synced by the beat at start-up) or
``config-every`` (N entries of ``timedelta(days=1)``, synced likewise). The ``beat_schedule`` dict
is the app's configuration, in the process whatever the scheduler: ``app_config_mb`` is what it
holds, measured apart with ``tracemalloc`` (a Celery ``crontab`` holds its expanded fields as
sets: about 3.5 KiB each).

Reported: RSS 10 s after the beat said it was ready (its ``setup_schedule``, the sync included,
has run), then every schedule armed due at one slot (as the herd does) and RSS again once all N
messages are on the broker (and 2 s more), and the peak (VmHWM). With ``seconds``, the beat then
keeps firing for that long: every schedule once per pass of :data:`PASS` seconds (N/PASS fires a
second, history rows piling up), RSS read after each pass.
"""

from __future__ import annotations

import math
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bench import loaders
from bench.herd import LEAD
from bench.services import Run

#: Seconds after the beat says it is ready, and after the last message, before RSS is read.
SETTLE = 10.0
#: Seconds over which one pass of the firing that follows spreads every schedule's fire.
PASS = 600


def app_config_mb(n: int, every: bool = False) -> float:
    """MiB of Python allocations the bench app's ``beat_schedule`` of ``n`` entries holds, built
    as :mod:`bench.app` builds it: what any beat holds for that configuration."""
    from datetime import timedelta

    from celery.schedules import crontab

    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    schedule = {
        f"e{i:06d}": {
            "task": "bench.noop",
            "schedule": timedelta(days=1)
            if every
            else crontab(minute=str(i % 60), hour=str(i // 60 % 24)),
            "args": [i],
        }
        for i in range(n)
    }
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    del schedule
    return held / 2**20


def memory(
    workdir: Path, n: int, source: str = "stored", *, timeout: float = 1800, seconds: float = 0
) -> dict[str, Any]:
    run = Run(workdir, f"memory-{source}-{n}")
    try:
        load_s = None
        if source == "stored":
            load_s = loaders.load_dbeat(run, n)
            beat = run.start_beat("dbeat")
        else:
            kind = "every" if source == "config-every" else "crontab"
            beat = run.start_beat(
                "dbeat", BENCH_BEAT_SCHEDULE=str(n), BENCH_BEAT_SCHEDULE_KIND=kind
            )
        started = time.time()
        run.wait_ready(1, timeout=timeout)
        ready_s = time.time() - started
        time.sleep(SETTLE)
        rss_started = beat.ps.memory_info().rss / 2**20
        peak_started = beat.peak_rss_mb()
        slot = math.ceil(time.time() + LEAD)
        loaders.arm_dbeat(run, slot)
        done = run.wait_length(n, timeout)
        time.sleep(2)
        row = {
            "scenario": "memory",
            "system": "dbeat",
            "source": source,
            "n": n,
            "load_s": load_s,
            "ready_s": ready_s,
            "rss_started_mb": rss_started,
            "peak_started_mb": peak_started,
            "drain_s": None if done is None else done - slot,
            "rss_fired_mb": beat.ps.memory_info().rss / 2**20,
            "peak_rss_mb": beat.peak_rss_mb(),
            "app_config_mb": 0.0
            if source == "stored"
            else app_config_mb(n, every=source == "config-every"),
        }
        if seconds:
            row.update(_keep_firing(run, beat, n, seconds))
        print(f"  memory: {row}", flush=True)
        return row
    finally:
        run.close()


def _keep_firing(run: Run, beat: Any, n: int, seconds: float) -> dict[str, Any]:
    """Passes of :data:`PASS` seconds for ``seconds``, each firing every schedule once (the
    queue emptied between passes); RSS after each."""
    started = time.time()
    rss: list[float] = []
    while time.time() - started < seconds:
        run.clear_queue()
        loaders.arm_dbeat(run, math.ceil(time.time() + LEAD), spread=PASS)
        if run.wait_length(n, PASS + 600) is None:
            break
        rss.append(round(beat.ps.memory_info().rss / 2**20, 1))
    return {
        "fired_s": time.time() - started,
        "passes": len(rss),
        "rss_passes_mb": rss,
        "rss_hour_mb": rss[-1] if rss else None,
        "peak_rss_mb": beat.peak_rss_mb(),
    }
