"""Run a worker and two beats of the example app, show the fires, and check each arrived once.

    python example_project/demo.py [--seconds 45] [--beats 2]

Beat and worker lines are prefixed with the process they came from. At the end every fire the
beats recorded in the database is matched with what the worker received.
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
from datetime import datetime, timezone
from pathlib import Path

import sqlalchemy as sa

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from proj.celery import VAR, app  # noqa: E402

RECEIVED = VAR / "received.jsonl"
SHOW = ("dbeat: ", "ran ", "ERROR", "Traceback", "beat: Starting", "ready.")


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


def received() -> list[dict[str, str]]:
    if not RECEIVED.exists():
        return []
    return [json.loads(line) for line in RECEIVED.read_text().splitlines() if line.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=45.0, help="how long the beats run")
    parser.add_argument("--beats", type=int, default=2, help="how many beats to start")
    options = parser.parse_args()

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
    beats = [
        start(
            f"beat-{n}",
            "beat",
            "-S",
            "celery_dbeat.Scheduler",
            "--loglevel=INFO",
            f"--pidfile={VAR / f'beat-{n}.pid'}",
        )
        for n in range(1, options.beats + 1)
    ]
    processes = [worker, *beats]
    try:
        deadline = time.monotonic() + options.seconds
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in processes):
                print("a process exited early; see its output above", file=sys.stderr)
                return 1
            time.sleep(0.5)
    except KeyboardInterrupt:
        print("\ninterrupted; stopping")
    finally:
        for beat in beats:
            beat.send_signal(signal.SIGTERM)
        for beat in beats:
            beat.wait(timeout=20)
    return summarise(worker, started)


def summarise(worker: subprocess.Popen[str], started: datetime) -> int:
    engine = sa.create_engine(app.conf.dbeat_database_url)
    query = sa.text(
        "SELECT s.name, f.slot, f.task_id, f.beat FROM dbeat_fires f "
        "JOIN dbeat_schedules s ON s.id = f.schedule_id "
        "WHERE f.status = 'sent' AND f.recorded_at >= :started ORDER BY f.slot"
    )
    with engine.connect() as conn:
        fires = conn.execute(query, {"started": started.replace(tzinfo=None)}).all()
    engine.dispose()
    expected = {fire.task_id for fire in fires}
    # Let the worker drain what the beats sent just before they stopped.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not expected <= {r["task_id"] for r in received()}:
        time.sleep(0.5)
    worker.send_signal(signal.SIGTERM)
    worker.wait(timeout=20)

    deliveries = Counter(r["task_id"] for r in received())
    runs = run_outcomes(started)
    by_schedule: dict[str, list[sa.Row[tuple[str, datetime, str, str]]]] = defaultdict(list)
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
        f"{duplicates} duplicates, {missing} missing"
    )
    print(
        "  runs recorded by the worker hook: "
        + (", ".join(f"{n} {outcome}" for outcome, n in sorted(runs.items())) or "none")
    )
    if duplicates or missing:
        print("FAILED: every fire should reach the worker exactly once", file=sys.stderr)
        return 1
    print(
        "OK: every fire reached the worker exactly once, although "
        f"{len({f.beat for f in fires}) or 0} beat(s) shared the work"
    )
    return 0


def run_outcomes(started: datetime) -> Counter[str]:
    """How the sent fires ran, as the worker hook (``celery_dbeat.worker``) recorded it."""
    engine = sa.create_engine(app.conf.dbeat_database_url)
    query = sa.text(
        "SELECT coalesce(run_status, 'not reported') FROM dbeat_fires "
        "WHERE status = 'sent' AND recorded_at >= :started"
    )
    with engine.connect() as conn:
        outcomes = conn.execute(query, {"started": started.replace(tzinfo=None)}).scalars()
        counts = Counter(str(outcome) for outcome in outcomes)
    engine.dispose()
    return counts


if __name__ == "__main__":
    sys.exit(main())
