"""The load and backlog scenarios: a week-long outage, twice the load one beat publishes, what
one fire costs the database, and a large ``beat_schedule`` on a host three times slower.

outage: 1,000 every-minute and 100 every-second schedules per misfire policy (skip, latest,
all: 3,300 rows, the default ``catchup_limit`` of 100), the every-minute ones spread over the
minute (``Cron('* * * * * s')``, ``s = i % 60``), every beat down for 7 days, then one beat
back. A collector pops the queue and stamps each message. On-time fires are those whose slot
came after the beat was launched; those of the tolerance (5 s) before it are late whatever beat
does (counted apart: "due at start"); the rest are catch-up. Reported: seconds from the beat's
start to its first on-time and first catch-up fire, on-time lag p50/p99/max while the catch-up
drains and after, the catch-up's size and drain rate, the time to recover (the last catch-up
fire), and the most fires recorded and not yet sent (PENDING, sampled every second).

overload: first a herd of ``--n`` (10,000) daily schedules measures what one beat publishes here,
now (R, msgs/s); then 2R schedules every second (offered: twice R) for ``--seconds`` (60), then
three quarters of them paused (offered: half of R). Reported: the published rate while
overloaded as a share of R, lag p50/p99 at the end of the overload, the most fires recorded and
not yet sent, the time from the drop until lag is under a second again, duplicates.

cost: ``--n`` (60,000) schedules spread over the minute (about 1,000 fires a second) for
``--seconds``, on a PostgreSQL cluster of its own with durable settings; per fire: SQL statements
the beat sent (a SQLAlchemy event counter) and the server ran (``pg_stat_statements``), their
execution time, transactions and rows written (``pg_stat_database``), WAL bytes
(``pg_stat_wal``), the cluster's CPU (its processes' user+system time), Redis commands and CPU
(``INFO``; Redis is the shared one: run it when nothing else uses it).

slowstart: ``--n`` (100,000) entries in ``beat_schedule``; the beat runs pinned to one core
beside two busy loops on the same core (a third of a core: a host about three times slower)
with ``dbeat_lock_ttl = 10`` (PostgreSQL ends a transaction idle for 10 s instead of 30).
Reported: seconds until the beat has synced and started, and then its CPU over a minute of idle,
as a share of a core.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]
import sqlalchemy as sa

from bench import herd, loaders
from bench.app import TASK_NAME
from bench.services import Run, decode

UTC = timezone.utc
POLICIES = ("skip", "latest", "all")
TOLERANCE = 5.0


class Stamped(threading.Thread):
    """Pops every message off the queue: ``(seen_at, slot, task_id)`` of each."""

    def __init__(self, run: Run) -> None:
        super().__init__(name="bench-stamped", daemon=True)
        self.run_ = run
        self.seen: list[tuple[float, float, str]] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        client, key = self.run_.redis, self.run_.queue_key
        while not self.stopping.is_set():
            # kombu LPUSHes and consumers BRPOP: the oldest message is at the tail. Pop from
            # there, as a worker would, so a backlog here does not inflate the oldest's lag.
            raw = client.rpop(key, 2000)
            if not raw:
                time.sleep(0.003)
                continue
            at = time.time()
            for message in raw:
                decoded = decode(message)
                headers = decoded["headers"]
                slot = datetime.fromisoformat(headers["dbeat_slot"]).timestamp()
                self.seen.append((at, slot, headers["id"]))

    def stop(self) -> None:
        self.stopping.set()
        self.join(5)


class Sampler(threading.Thread):
    """The number of fires recorded and not yet sent, every second."""

    def __init__(self, run: Run) -> None:
        super().__init__(name="bench-sampler", daemon=True)
        self.run_ = run
        self.samples: list[tuple[float, int, int]] = []  # (at, pending, queued)
        self.stopping = threading.Event()

    def run(self) -> None:
        query = sa.text(
            "SELECT count(*) FILTER (WHERE status = 'pending'),"
            " coalesce(sum(slot_count) FILTER (WHERE status = 'queued'), 0) FROM dbeat_fires"
        )
        while not self.stopping.wait(1.0):
            with self.run_.engine.connect() as conn:
                pending, queued = conn.execute(query).one()
            self.samples.append((time.time(), int(pending), int(queued)))

    def stop(self) -> None:
        self.stopping.set()
        self.join(5)


def _pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def timeline(
    seen: list[tuple[float, float, str]],
    samples: list[tuple[float, int, int]],
    start: float,
    end: float,
    step: float = 10.0,
) -> list[dict[str, Any]]:
    """Per ``step`` seconds from ``start``: messages received a second, their lag (p50, p99:
    receipt minus slot), and the most fires recorded and not yet sent (pending) and slots queued
    that the sampler saw."""
    rows = []
    at = start
    while at < end:
        lags = [got - slot for got, slot, _ in seen if at <= got < at + step]
        sampled = [(p, q) for t, p, q in samples if at <= t < at + step]
        rows.append(
            {
                "from_s": round(at - start),
                "per_s": round(len(lags) / step, 1),
                "lag_p50_s": _pct(lags, 0.5),
                "lag_p99_s": _pct(lags, 0.99),
                "unsent_max": max((p for p, _ in sampled), default=None),
                "queued_max": max((q for _, q in sampled), default=None),
            }
        )
        at += step
    return rows


def print_timeline(rows: list[dict[str, Any]]) -> None:
    print("  from_s  per_s  lag_p50  lag_p99  unsent  queued", flush=True)
    for r in rows:
        p50, p99 = r["lag_p50_s"], r["lag_p99_s"]
        print(
            f"  {r['from_s']:6d} {r['per_s']:6.0f} {p50 if p50 is None else round(p50, 2)!s:>8}"
            f" {p99 if p99 is None else round(p99, 2)!s:>8} {r['unsent_max']!s:>7}"
            f" {r['queued_max']!s:>7}",
            flush=True,
        )


def _load(run: Run, definitions: list[Any], batch: int = 2000) -> None:
    from celery_dbeat.api import Schedules
    from celery_dbeat.store import migrate

    with Schedules(run.database_url) as api:
        migrate(api.store.engine)
        for first in range(0, len(definitions), batch):
            api.add_many(definitions[first : first + batch])


# outage ------------------------------------------------------------------------------------------


def outage_mix(anchor: datetime, per_policy: tuple[int, int] = (1000, 100)) -> list[Any]:
    """Per misfire policy, ``per_policy[0]`` every-minute crons spread over the minute and
    ``per_policy[1]`` every-second intervals anchored at ``anchor``."""
    from celery_dbeat import Cron, Every
    from celery_dbeat.core.definitions import Definition

    minutely, secondly = per_policy
    definitions = []
    for policy in POLICIES:
        for i in range(minutely):
            name = f"{policy}-m{i:04d}"
            definitions.append(
                Definition.create(
                    name=name,
                    task=TASK_NAME,
                    schedule=Cron(f"* * * * * {i % 60}"),
                    args=[name],
                    misfire_policy=policy,
                )
            )
        for i in range(secondly):
            name = f"{policy}-s{i:03d}"
            definitions.append(
                Definition.create(
                    name=name,
                    task=TASK_NAME,
                    schedule=Every(1),
                    args=[name],
                    misfire_policy=policy,
                    start_at=anchor,
                )
            )
    return definitions


def backdate(engine: sa.Engine, back: timedelta) -> None:
    """Every beat down for ``back``: each schedule's next slot moves back that far on its grid."""
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "UPDATE dbeat_schedules SET next_run_at = next_run_at - :back,"
                " updated_at = updated_at - :back, created_at = created_at - :back"
            ),
            {"back": back},
        )


def outage(
    workdir: Path, *, days: float = 7, per_policy: tuple[int, int] = (1000, 100)
) -> dict[str, Any]:
    run = Run(workdir, "outage")
    try:
        back = timedelta(days=days)
        definitions = outage_mix(datetime.now(UTC) - back - timedelta(hours=1), per_policy)
        _load(run, definitions)
        backdate(run.engine, back)
        with run.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM ANALYZE dbeat_schedules")
        stamped, sampler = Stamped(run), Sampler(run)
        stamped.start()
        sampler.start()
        started = time.time()
        beat = run.start_beat("dbeat")
        cpu0 = beat.cpu()
        # Until the catch-up has drained and a minute of on-time fires followed it.
        deadline = started + 1800
        while time.time() < deadline:
            time.sleep(2)
            if sampler.samples and sampler.samples[-1][2] == 0 and time.time() - started > 30:
                late = [at for at, slot, _ in stamped.seen if slot < started - TOLERANCE]
                if late and time.time() - max(late) > 60:
                    break
        cpu1 = beat.cpu()
        stamped.stop()
        sampler.stop()
        seen = stamped.seen
        # On time: slots that came due once the beat was launched. Slots of the last few seconds
        # before it (within the tolerance) came due while no beat ran: late whatever the beat
        # does, counted apart.
        on_time = [(at, slot) for at, slot, _ in seen if slot >= started]
        at_start = [at - slot for at, slot, _ in seen if started - TOLERANCE <= slot < started]
        catch_up = [(at, slot) for at, slot, _ in seen if slot < started - TOLERANCE]
        drained = max((at for at, _ in catch_up), default=started)
        first_catch_up = min((at for at, _ in catch_up), default=None)
        during = [at - slot for at, slot in on_time if slot < drained]
        after = [at - slot for at, slot in on_time if slot >= drained]
        ids = [task_id for _, _, task_id in seen]
        row = {
            "scenario": "outage",
            "system": "dbeat",
            "n": len(definitions),
            "down_days": days,
            "first_on_time_s": min((at for at, _ in on_time), default=started) - started,
            "first_catch_up_s": None if first_catch_up is None else first_catch_up - started,
            "catch_up_fires": len(catch_up),
            "recover_s": drained - started,
            "drain_per_s": len(catch_up) / max(drained - (first_catch_up or started), 1e-6),
            "on_time_fires_during": len(during),
            "on_time_lag_p50_s": _pct(during, 0.5),
            "on_time_lag_p99_s": _pct(during, 0.99),
            "on_time_lag_max_s": max(during, default=None),
            "on_time_lag_p99_after_s": _pct(after, 0.99),
            "due_at_start_fires": len(at_start),
            "due_at_start_lag_max_s": max(at_start, default=None),
            "max_unsent": max((p for _, p, _ in sampler.samples), default=0),
            "max_queued": max((q for _, _, q in sampler.samples), default=0),
            "duplicates": len(ids) - len(set(ids)),
            "beat_cpu_s": cpu1 - cpu0,
            "timeline": timeline(seen, sampler.samples, started, drained + 60, step=20.0),
        }
        print(f"  outage: {row}", flush=True)
        print_timeline(row["timeline"])
        _dump(run, seen, started)
        return row
    finally:
        run.close()


def _dump(run: Run, seen: list[tuple[float, float, str]], started: float) -> None:
    """Every message (seen at, slot, task id) joined with its fire row (schedule, status it was
    recorded with, recorded at, sent at), as JSON lines in the run's workdir: where a figure
    comes from can be read afterwards."""
    query = sa.text(
        "SELECT f.task_id, s.name, f.origin, f.recorded_at, f.sent_at FROM dbeat_fires f"
        " JOIN dbeat_schedules s ON s.id = f.schedule_id WHERE f.task_id IS NOT NULL"
    )
    with run.engine.connect() as conn:
        fires = {r[0]: r[1:] for r in conn.execute(query)}
    path = run.workdir / "messages.jsonl"
    with path.open("w") as out:
        for at, slot, task_id in seen:
            name, origin, recorded_at, sent_at = fires.get(task_id, (None, None, None, None))
            record = {
                "seen": at - started,
                "slot": slot - started,
                "name": name,
                "origin": origin,
                "recorded": None if recorded_at is None else recorded_at.timestamp() - started,
                "sent": None if sent_at is None else sent_at.timestamp() - started,
            }
            out.write(json.dumps(record) + "\n")
    print(f"  messages: {path}", flush=True)


# overload ----------------------------------------------------------------------------------------


def overload(workdir: Path, n: int = 10_000, *, seconds: float = 60) -> list[dict[str, Any]]:
    from celery_dbeat import Every
    from celery_dbeat.core.definitions import Definition

    rows: list[dict[str, Any]] = []
    herd_row = herd.herd(workdir, "dbeat", n, repeats=1)[0]
    rate = float(herd_row["msgs_per_s"])
    rows.append({**herd_row, "scenario": "overload-herd"})
    run = Run(workdir, "overload")
    try:
        k = int(2 * rate)
        _load(
            run,
            [
                Definition.create(name=f"o{i:05d}", task=TASK_NAME, schedule=Every(1), args=[i])
                for i in range(k)
            ],
        )
        stamped, sampler = Stamped(run), Sampler(run)
        stamped.start()
        sampler.start()
        beat = run.start_beat("dbeat")
        run.wait_ready(1)
        t0 = time.time()
        time.sleep(seconds)
        t1 = time.time()
        with run.engine.begin() as conn:  # offered: from 2R down to R/2
            conn.execute(
                sa.text("UPDATE dbeat_schedules SET enabled = false WHERE name >= :first"),
                {"first": f"o{k // 4:05d}"},
            )
        recovered = None
        deadline = t1 + 600
        while time.time() < deadline:
            time.sleep(1)
            recent = [s for s in stamped.seen if s[0] > time.time() - 2]
            if recent and max(at - slot for at, slot, _ in recent) < 1.0:
                recovered = time.time()
                break
        stamped.stop()
        sampler.stop()
        overloaded = [(at, slot) for at, slot, _ in stamped.seen if t0 + 5 <= at < t1]
        end_lags = [at - slot for at, slot in overloaded if at >= t1 - 5]
        ids = [task_id for _, _, task_id in stamped.seen]
        row = {
            "scenario": "overload",
            "system": "dbeat",
            "n": k,
            "herd_rate": rate,
            "offered_per_s": k,
            "published_per_s": len(overloaded) / (t1 - t0 - 5),
            "share_of_herd": len(overloaded) / (t1 - t0 - 5) / rate,
            "lag_p50_end_s": _pct(end_lags, 0.5),
            "lag_p99_end_s": _pct(end_lags, 0.99),
            "max_unsent": max((p for _, p, _ in sampler.samples), default=0),
            "recover_s": None if recovered is None else recovered - t1,
            "duplicates": len(ids) - len(set(ids)),
            "behind_warnings": beat.log.read_text(errors="replace").count("behind by"),
            "timeline": timeline(
                stamped.seen, sampler.samples, t0, recovered or time.time(), step=10.0
            ),
        }
        print(f"  overload: {row}", flush=True)
        print_timeline(row["timeline"])
        rows.append(row)
        return rows
    finally:
        run.close()


# cost --------------------------------------------------------------------------------------------


def _cluster_cpu(postmaster: int) -> float:
    """CPU seconds (user + system) of a PostgreSQL cluster: its postmaster and every child."""
    root = psutil.Process(postmaster)
    total = 0.0
    for proc in [root, *root.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            times = proc.cpu_times()
            total += times.user + times.system
    return total


def _redis_counters(run: Run) -> dict[str, float]:
    info = run.redis.info("all")
    counters = {
        f"calls_{name.removeprefix('cmdstat_')}": float(stats["calls"])
        for name, stats in info.items()
        if name.startswith("cmdstat_") and isinstance(stats, dict)
    }
    counters["cpu"] = float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
    return counters


def _pg_counters(run: Run, postmaster: int) -> dict[str, float]:
    with run.engine.connect() as conn:
        commits, written = conn.execute(
            sa.text(
                "SELECT xact_commit, tup_inserted + tup_updated + tup_deleted"
                " FROM pg_stat_database WHERE datname = current_database()"
            )
        ).one()
        wal = conn.execute(sa.text("SELECT wal_bytes FROM pg_stat_wal")).scalar_one()
        calls, exec_ms = conn.execute(
            sa.text(
                "SELECT sum(calls), sum(total_exec_time) FROM pg_stat_statements s"
                " JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = current_database()"
            )
        ).one()
    return {
        "commits": float(commits),
        "rows_written": float(written),
        "wal_bytes": float(wal),
        "statements": float(calls or 0),
        "exec_ms": float(exec_ms or 0),
        "server_cpu": _cluster_cpu(postmaster),
    }


def cost(workdir: Path, n: int = 60_000, *, seconds: float = 60) -> dict[str, Any]:
    """See the module docstring. The database is a private cluster of its own (so its CPU and
    WAL are this benchmark's alone) with PostgreSQL's durable defaults (fsync, synchronous
    commit, full page writes) and pg_stat_statements; Redis is the shared one."""
    from tests.chaos.services import PostgresCluster

    cluster = PostgresCluster(
        options={
            "fsync": "on",
            "synchronous_commit": "on",
            "full_page_writes": "on",
            "shared_preload_libraries": "pg_stat_statements",
            "pg_stat_statements.track": "all",
        }
    )
    run = Run(
        workdir, f"cost-{n}", server=f"postgresql+psycopg://postgres@127.0.0.1:{cluster.port}"
    )
    try:
        with run.engine.begin() as conn:
            conn.execute(sa.text("CREATE EXTENSION IF NOT EXISTS pg_stat_statements"))
        postmaster = int((cluster.data / "postmaster.pid").read_text().split()[0])
        loaders.load_dbeat(run, n, spread=True)
        counter = run.workdir / "queries"
        stamped = Stamped(run)
        stamped.start()
        beat = run.start_beat("dbeat", BENCH_QUERY_FILE=str(counter))
        run.wait_ready(1)
        time.sleep(70)  # the first minute catches up what was missed while loading
        fired0, queries0 = len(stamped.seen), int(counter.read_text())
        pg0, redis0, cpu0, t0 = (
            _pg_counters(run, postmaster),
            _redis_counters(run),
            beat.cpu(),
            time.time(),
        )
        time.sleep(seconds)
        fired1, queries1 = len(stamped.seen), int(counter.read_text())
        pg1, redis1, cpu1, t1 = (
            _pg_counters(run, postmaster),
            _redis_counters(run),
            beat.cpu(),
            time.time(),
        )
        stamped.stop()
        fires = fired1 - fired0
        per = {key: (pg1[key] - pg0[key]) / fires for key in pg0}
        redis_calls = {
            key.removeprefix("calls_"): round((redis1.get(key, 0) - redis0.get(key, 0)) / fires, 3)
            for key in redis1
            if key.startswith("calls_") and redis1.get(key, 0) != redis0.get(key, 0)
        }
        row = {
            "scenario": "cost",
            "system": "dbeat",
            "n": n,
            "fires_per_s": fires / (t1 - t0),
            "statements_per_fire": (queries1 - queries0) / fires,
            "server_statements_per_fire": per["statements"],
            "server_exec_us_per_fire": per["exec_ms"] * 1000,
            "commits_per_fire": per["commits"],
            "rows_written_per_fire": per["rows_written"],
            "wal_bytes_per_fire": per["wal_bytes"],
            "pg_cpu_us_per_fire": per["server_cpu"] * 1e6,
            "beat_cpu_us_per_fire": (cpu1 - cpu0) / fires * 1e6,
            "redis_cpu_us_per_fire": (redis1["cpu"] - redis0["cpu"]) / fires * 1e6,
            "redis_calls_per_fire": redis_calls,
        }
        print(f"  cost: {row}", flush=True)
        return row
    finally:
        run.close()
        cluster.close()


# slowstart ---------------------------------------------------------------------------------------


def _busy() -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        ["taskset", "-c", "1", sys.executable, "-c", "while True: pass"],
        stdout=subprocess.DEVNULL,
    )


def slowstart(workdir: Path, n: int = 100_000, *, slowdown: int = 3) -> dict[str, Any]:
    run = Run(workdir, f"slowstart-{n}")
    competitors = [_busy() for _ in range(slowdown - 1)]
    try:
        started = time.time()
        beat = run.start_beat(
            "dbeat",
            settings={"dbeat_lock_ttl": 10},
            BENCH_BEAT_SCHEDULE=str(n),
        )
        os.sched_setaffinity(beat.popen.pid, {1})
        run.wait_ready(1, timeout=1800)
        ready = time.time() - started
        time.sleep(10)
        cpu0, t0 = beat.cpu(), time.time()
        time.sleep(60)
        cpu1, t1 = beat.cpu(), time.time()
        log = beat.log.read_text(errors="replace")
        row = {
            "scenario": "slowstart",
            "system": "dbeat",
            "n": n,
            "slowdown": slowdown,
            "ready_s": ready,
            "idle_core_share": (cpu1 - cpu0) / (t1 - t0),
            "sync_retries": log.count("unreachable") + log.count("idle-in-transaction"),
        }
        print(f"  slowstart: {row}", flush=True)
        return row
    finally:
        for proc in competitors:
            proc.kill()
        run.close()
