"""The steady, edits, startup and idle scenarios.

steady: 100k schedules ``Cron('* * * * * s')`` with ``s = i % 60`` (about 1,667 fires every
second). A collector pops the queue every few milliseconds and stamps each message with the time
it saw it; lag = that time minus the ``dbeat_slot`` header. The first minute after beat starts is
a warm-up (slots missed while loading are caught up then) and is not counted.

edits: the same beat goes on while editor processes (:mod:`bench.editor`) update random
schedules' args through ``Schedules.update``. Lag is measured as in steady; an edit's *effect
delay* is, for every fire that still carried older args than an edit committed before the fire
was seen, the time from that commit to the fire (0 when every fire carried every earlier edit).

startup: the beat is stopped and a new one started on the same 100k rows: time from the launch
to the first message on the broker.

idle: N daily schedules, nothing due for a minute: beat CPU per minute, SQL statements per
second (a SQLAlchemy event counter inside beat, :mod:`bench.app`), RSS.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

from bench import loaders
from bench.services import ROOT, SERVERS, Run, decode


class Collector(threading.Thread):
    """Pops every message off the queue, remembering when each batch was popped."""

    def __init__(self, run: Run) -> None:
        super().__init__(name="bench-collector", daemon=True)
        self.run_ = run
        self.batches: list[tuple[float, list[bytes]]] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        client, key = self.run_.redis, self.run_.queue_key
        while not self.stopping.is_set():
            # kombu LPUSHes and consumers BRPOP: the oldest message is at the tail. Pop from
            # there, as a worker would, so a backlog here does not inflate the oldest's lag.
            raw = client.rpop(key, 2000)
            if raw:
                self.batches.append((time.time(), list(raw)))
            else:
                time.sleep(0.003)

    def stop(self) -> None:
        self.stopping.set()
        self.join(5)

    def fires(self) -> list[tuple[float, float, list[Any]]]:
        """``(seen_at, slot, args)`` of every message popped."""
        out = []
        for seen, raws in self.batches:
            for raw in raws:
                message = decode(raw)
                slot = datetime.fromisoformat(message["headers"]["dbeat_slot"]).timestamp()
                out.append((seen, slot, message["args"] or []))
        return out


def _lags(fires: list[tuple[float, float, list[Any]]], start: float, end: float) -> dict[str, Any]:
    lags = sorted(seen - slot for seen, slot, _ in fires if start <= slot < end)
    if not lags:
        return {"fires": 0}

    def pct(p: float) -> float:
        return lags[min(len(lags) - 1, int(p * len(lags)))]

    return {
        "fires": len(lags),
        "fires_per_s": len(lags) / (end - start),
        "lag_p50_s": pct(0.50),
        "lag_p99_s": pct(0.99),
        "lag_max_s": lags[-1],
    }


def steady(
    workdir: Path,
    n: int = 100_000,
    *,
    warmup: float = 60,
    seconds: float = 120,
    edit_rate: float = 1000,
    editors: int = 4,
    beats: int = 1,
    database: str = "postgresql",
) -> list[dict[str, Any]]:
    """``beats`` beats share the schedules (beat CPU is theirs together, peak RSS the most);
    ``database``: where they are kept (a key of :data:`.services.SERVERS`)."""
    run = Run(workdir, f"steady-{n}", server=SERVERS[database])
    rows: list[dict[str, Any]] = []
    try:
        load_s = loaders.load_dbeat(run, n, spread=True)
        print(f"  loaded {n} schedules through the API in {load_s:.1f}s", flush=True)
        rows.append({"scenario": "load", "system": "dbeat", "n": n, "load_s": load_s})
        started = [run.start_beat("dbeat") for _ in range(beats)]
        collector = Collector(run)
        collector.start()
        run.wait_ready(beats)
        time.sleep(warmup)

        def cpu() -> float:
            return sum(beat.cpu() for beat in started)

        cpu0, t0 = cpu(), time.time()
        time.sleep(seconds)
        cpu1, t1 = cpu(), time.time()

        outs = [run.workdir / f"edits-{i}.json" for i in range(editors)]
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "bench.editor",
                    str(edit_rate / editors),
                    str(seconds),
                    str(n),
                    str(out),
                ],
                cwd=ROOT,
                env=run.env("dbeat"),
            )
            for out in outs
        ]
        t2 = time.time() + 2  # the editors' start-up
        for proc in procs:
            proc.wait(seconds + 120)
        cpu2, t3 = cpu(), time.time()
        time.sleep(3)
        collector.stop()
        fires = collector.fires()

        row = {"scenario": "steady", "system": "dbeat", "n": n, "beats": beats}
        row.update(seconds=t1 - t0, **_lags(fires, t0, t1))
        row.update(beat_cpu_s=cpu1 - cpu0, peak_rss_mb=max(b.peak_rss_mb() for b in started))
        rows.append(row)
        print(f"  steady: {row}", flush=True)

        edits = [json.loads(out.read_text()) for out in outs]
        row = {"scenario": "edits", "system": "dbeat", "n": n, "seconds": t3 - t2}
        row.update(_lags(fires, t2, t3 - 3))
        done = [e for part in edits for e in part["edits"]]
        row.update(
            edits=len(done),
            edits_per_s=len(done) / max(1e-6, max(p["seconds"] for p in edits)),
            edit_conflicts=sum(p["conflicts"] for p in edits),
            beat_cpu_s=cpu2 - cpu1,
        )
        row.update(_effect_delays(done, fires))
        rows.append(row)
        print(f"  edits: {row}", flush=True)

        rows.append(_startup(run, n))
    finally:
        run.close()
    return rows


def _effect_delays(
    edits: list[list[Any]], fires: list[tuple[float, float, list[Any]]]
) -> dict[str, Any]:
    """For every fire, the edits of its schedule committed before it was seen and after the
    edit whose args it carries (by commit order: two editors' batches may commit in the other
    order than their stamps); a fire that missed one is stale by ``seen - that commit``."""
    by_name: dict[str, list[tuple[float, float]]] = defaultdict(list)  # name -> (commit, stamp)
    for name, stamp, committed in edits:
        by_name[name].append((committed, stamp))
    for history in by_name.values():
        history.sort()
    delays = []
    for seen, _, args in fires:
        if not args or args[0] not in by_name:
            continue
        history = by_name[args[0]]
        carried = float(args[1]) if len(args) > 1 else None
        carried_commit = next((c for c, stamp in history if stamp == carried), float("-inf"))
        missed = [c for c, _ in history if carried_commit < c < seen]
        if missed:
            delays.append(seen - min(missed))
    return {
        "stale_fires": len(delays),
        "effect_delay_max_s": max(delays, default=0.0),
        "stale_over_1s": sum(1 for d in delays if d > 1.0),
    }


def _startup(run: Run, n: int) -> dict[str, Any]:
    run.stop_beats()
    run.clear_queue()
    launched = time.time()
    run.start_beat("dbeat")
    first = run.wait_length(1, timeout=300)
    row = {
        "scenario": "startup",
        "system": "dbeat",
        "n": n,
        "first_fire_s": None if first is None else first - launched,
    }
    print(f"  startup: {row}", flush=True)
    return row


def idle(workdir: Path, n: int, *, seconds: float = 60) -> dict[str, Any]:
    run = Run(workdir, f"idle-{n}")
    try:
        load_s = loaders.load_dbeat(run, n)
        counter = run.workdir / "queries"
        beat = run.start_beat("dbeat", BENCH_QUERY_FILE=str(counter))
        run.wait_ready(1)
        time.sleep(10)
        cpu0, q0, t0 = beat.cpu(), int(counter.read_text()), time.time()
        time.sleep(seconds)
        cpu1, q1, t1 = beat.cpu(), int(counter.read_text()), time.time()
        row = {
            "scenario": "idle",
            "system": "dbeat",
            "n": n,
            "load_s": load_s,
            "cpu_s_per_min": (cpu1 - cpu0) * 60 / (t1 - t0),
            "queries_per_s": (q1 - q0) / (t1 - t0),
            "rss_mb": beat.ps.memory_info().rss / 2**20,
            "peak_rss_mb": beat.peak_rss_mb(),
        }
        print(f"  idle: {row}", flush=True)
        return row
    finally:
        run.close()
