"""Run a worker and two beats of the example app, show the fires, and check each arrived once.

    python example_project/demo.py [--seconds 45] [--beats 2] [--broker URL] [--kill-one]

The broker is kombu's filesystem transport unless ``--broker`` (or ``CELERY_BROKER_URL``) names
another, e.g. RabbitMQ ``amqp://guest:guest@127.0.0.1:5672//`` or Redis
``redis://127.0.0.1:6379/0``. Beat and worker lines are prefixed with the process they came from.
At the end every fire the beats recorded in the database is matched with what the worker
received: each must have arrived once, and nothing else.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from kombu.utils.url import sanitize_url

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from proj.celery import QUEUE, VAR, app  # noqa: E402

from celery_dbeat.store.models import Beat, Fire, Schedule  # noqa: E402

RECEIVED = VAR / "received.jsonl"
SHOW = ("dbeat: ", "ran ", "ERROR", "Traceback", "beat: Starting", "ready.")
#: With ``--kill-one``: how long the survivors run alone before a new beat replaces the victim.
RESTART_AFTER = 5.0


def say(text: str) -> None:
    now = datetime.now(timezone.utc).strftime("%H:%M:%S")
    print(f"[{'demo':>7}] {now} {text}", flush=True)


def start(name: str, *args: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "celery", "-A", "proj", *args]
    process = subprocess.Popen(
        command,
        cwd=HERE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "EXAMPLE_BEAT_NAME": name},
    )

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            if any(marker in line for marker in SHOW):
                print(f"[{name:>7}] {line.rstrip()}", flush=True)

    threading.Thread(target=pump, daemon=True).start()
    return process


def start_beat(name: str) -> subprocess.Popen[str]:
    return start(
        name,
        "beat",
        "-S",
        "celery_dbeat.Scheduler",
        "--loglevel=INFO",
        f"--pidfile={VAR / f'{name}.pid'}",
    )


def received() -> list[dict[str, str]]:
    if not RECEIVED.exists():
        return []
    return [json.loads(line) for line in RECEIVED.read_text().splitlines() if line.strip()]


def has_sent(engine: sa.Engine, beat: str) -> bool:
    with engine.connect() as conn:
        return bool(
            conn.execute(sa.select(Fire.id).where(Fire.beat == beat, Fire.status == "sent")).first()
        )


def wait_ticking(
    engine: sa.Engine, beats: dict[str, subprocess.Popen[str]], timeout: float = 120.0
) -> bool:
    """Wait until every beat has ticked (its heartbeat row); False if one exited first. The run's
    seconds count from then: on a busy host, starting takes seconds of its own."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in beats.values()):
            print("a beat exited while starting; see its output above", file=sys.stderr)
            return False
        try:
            with engine.connect() as conn:
                ticked = set(conn.execute(sa.select(Beat.name)).scalars())
        except (sa.exc.OperationalError, sa.exc.ProgrammingError):  # not migrated yet
            ticked = set()
        if set(beats) <= ticked:
            return True
        time.sleep(0.2)
    print(f"the beats did not start within {timeout:g} s", file=sys.stderr)
    return False


def between_fires(engine: sa.Engine, margin: float = 1.5) -> bool:
    """No fire is due within ``margin`` s, none was sent in the last ``margin`` s, none pending.

    A beat killed then is not caught between publishing a fire and marking it sent, the one
    moment a kill makes a fire go out twice (with the same task id; README, "Limits")."""
    now = datetime.now(timezone.utc)
    with engine.connect() as conn:
        upcoming = conn.execute(
            sa.select(sa.func.min(Schedule.next_run_at)).where(Schedule.enabled)
        ).scalar()
        last_sent = conn.execute(sa.select(sa.func.max(Fire.sent_at))).scalar()
        pending = conn.execute(
            sa.select(sa.func.count()).select_from(Fire).where(Fire.status == "pending")
        ).scalar()
    window = timedelta(seconds=margin)
    return (
        not pending
        and (upcoming is None or upcoming - now > window)
        and (last_sent is None or now - last_sent > window)
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=45.0, help="how long the beats run")
    parser.add_argument("--beats", type=int, default=2, help="how many beats to start")
    parser.add_argument(
        "--broker",
        metavar="URL",
        help="the broker (sets CELERY_BROKER_URL), e.g. amqp://guest:guest@127.0.0.1:5672//",
    )
    parser.add_argument(
        "--kill-one",
        action="store_true",
        help=f"SIGKILL beat-1 a third into the run, once it has sent a fire, between two fires,"
        f" and start a new beat in its place {RESTART_AFTER:g} s later",
    )
    options = parser.parse_args()
    if options.kill_one and options.beats < 2:
        parser.error("--kill-one needs --beats 2 or more, so that a beat is left to fire")
    if options.broker:
        os.environ["CELERY_BROKER_URL"] = options.broker  # read by proj.celery in each process
    broker = os.environ.get("CELERY_BROKER_URL")
    locks = app.conf.dbeat_redis_url
    say(
        f"broker {sanitize_url(broker) if broker else 'filesystem:// (under ' + str(VAR) + ')'},"
        f" queue {QUEUE}; schedules in {sanitize_url(app.conf.dbeat_database_url)};"
        f" locks {sanitize_url(locks) if locks else 'in the database'}"
    )

    RECEIVED.unlink(missing_ok=True)
    started = datetime.now(timezone.utc)
    worker = start(
        "worker",
        "worker",
        "--pool=solo",
        "--loglevel=INFO",
        "--without-heartbeat",
        "--without-gossip",
        "--without-mingle",
    )
    beats = {f"beat-{n}": start_beat(f"beat-{n}") for n in range(1, options.beats + 1)}
    engine = sa.create_engine(app.conf.dbeat_database_url, poolclass=sa.NullPool)
    exited_early = not wait_ticking(engine, beats)
    begin = time.monotonic()
    kill_from = begin + options.seconds / 3 if options.kill_one else None
    restart_at: float | None = None
    try:
        deadline = begin + options.seconds
        while not exited_early and time.monotonic() < deadline:
            if any(p.poll() is not None for p in [worker, *beats.values()]):
                print("a process exited early; see its output above", file=sys.stderr)
                exited_early = True
                break
            now = time.monotonic()
            # Once beat-1 has sent something, between fires; by two thirds into the run
            # regardless (on SQLite the other beat may win every fire).
            if (
                kill_from is not None
                and now >= kill_from
                and (
                    (has_sent(engine, "beat-1") and between_fires(engine))
                    or now > kill_from + min(20.0, options.seconds / 3)
                )
            ):
                victim = beats.pop("beat-1")
                victim.kill()
                victim.wait()
                say(f"SIGKILL beat-1 (pid {victim.pid}); the other beats carry on")
                kill_from, restart_at = None, now + RESTART_AFTER
            if restart_at is not None and now >= restart_at:
                beats["beat-1b"] = start_beat("beat-1b")
                say("started beat-1b in beat-1's place")
                restart_at = None
            time.sleep(0.1)
    except KeyboardInterrupt:
        print("\ninterrupted; stopping")
    finally:
        engine.dispose()
        say("stopping the beats (SIGTERM)")
        for beat in beats.values():
            beat.send_signal(signal.SIGTERM)
        for beat in beats.values():
            beat.wait(timeout=20)
    try:
        return 1 if exited_early else summarise(worker, started)
    finally:
        if worker.poll() is None:  # early exit, or the summary failed (database gone)
            worker.terminate()
            worker.wait(timeout=20)


def summarise(worker: subprocess.Popen[str], started: datetime) -> int:
    engine = sa.create_engine(app.conf.dbeat_database_url)
    query = (
        sa.select(Schedule.name, Fire.slot, Fire.task_id, Fire.beat)
        .join(Schedule, Schedule.id == Fire.schedule_id)
        .where(Fire.status == "sent", Fire.recorded_at >= started)
        .order_by(Fire.slot)
    )
    with engine.connect() as conn:
        fires = conn.execute(query).all()
    expected = {fire.task_id for fire in fires}
    # Let the worker drain what the beats sent just before they stopped.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not expected <= {r["task_id"] for r in received()}:
        time.sleep(0.5)
    worker.send_signal(signal.SIGTERM)
    worker.wait(timeout=20)

    deliveries = Counter(r["task_id"] for r in received())
    others = set(deliveries) - expected
    with engine.connect() as conn:
        # Messages of fires recorded before this run (left in the queue by an earlier one).
        earlier = set(
            conn.execute(
                sa.select(Fire.task_id).where(Fire.task_id.in_(others), Fire.recorded_at < started)
            ).scalars()
        )
        outcomes = conn.execute(
            sa.select(sa.func.coalesce(Fire.run_status, "not reported")).where(
                Fire.status == "sent", Fire.recorded_at >= started
            )
        ).scalars()
        runs = Counter(str(outcome) for outcome in outcomes)
    engine.dispose()
    unexpected = others - earlier

    by_schedule: dict[str, list[Any]] = defaultdict(list)
    for fire in fires:
        by_schedule[fire.name].append(fire)
    print("\nSummary")
    for name, rows in sorted(by_schedule.items()):
        senders = Counter(row.beat for row in rows)
        print(
            f"  {name:<22} {len(rows):>3} fires, sent by "
            + ", ".join(f"{beat} x{count}" for beat, count in sorted(senders.items()))
        )
    duplicates = sum(count - 1 for count in deliveries.values() if count > 1)
    missing = len(expected - set(deliveries))
    print(
        f"  {len(fires)} fires recorded, {sum(deliveries.values())} deliveries, "
        f"{duplicates} duplicates, {missing} missing, {len(unexpected)} unexpected"
    )
    if earlier:
        print(f"  {len(earlier)} messages of fires from an earlier run, left in the queue")
    print(
        "  runs recorded by the worker hook: "
        + (", ".join(f"{n} {outcome}" for outcome, n in sorted(runs.items())) or "none")
    )
    if duplicates or missing or unexpected:
        print("FAILED: every fire should reach the worker exactly once", file=sys.stderr)
        return 1
    print(
        "OK: every fire reached the worker exactly once; sent by "
        + ", ".join(sorted({str(f.beat) for f in fires}))
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
