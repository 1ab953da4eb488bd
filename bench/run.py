"""``python -m bench SCENARIO [--n N ...]``: one command per scenario, ``all`` for the table.

Every command prints one line per measurement, appends its rows to ``--out`` (JSON lines) and
prints the results table of everything in that file. See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import sys
import time
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]

from bench import edges, forecast, herd, limits, load, memory, report, steady, trigger

WORKDIR = Path(os.environ.get("BENCH_WORKDIR", "/tmp/dbeat-bench"))


def _save(out: Path, rows: list[dict[str, Any]]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as fh:
        for row in rows:
            fh.write(json.dumps(row, default=str) + "\n")


def _load(out: Path) -> list[dict[str, Any]]:
    if not out.exists():
        return []
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument(
        "scenario",
        choices=[
            *("herd", "scaleout", "ceiling", "steady", "idle", "sync", "catchup", "trigger"),
            *("backfill", "firstpass", "limits"),
            *("outage", "overload", "cost", "slowstart", "forecast", "forecast-db"),
            "forecast-bounded",
            "memory",
            *("all", "table"),
        ],
    )
    parser.add_argument("--n", type=int, action="append", help="schedules (repeatable)")
    parser.add_argument(
        "--system", action="append", choices=["dbeat", "redbeat", "django"], help="herd: who"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--beats",
        type=int,
        action="append",
        help="scaleout: beat counts; ceiling: producers; steady: beats sharing the schedules",
    )
    parser.add_argument("--seconds", type=float, default=120, help="steady/idle: measured time")
    parser.add_argument(
        "--firing", type=float, default=0, help="memory: seconds to keep firing after the herd"
    )
    parser.add_argument("--warmup", type=float, default=60, help="steady: not counted")
    parser.add_argument("--edit-rate", type=float, default=1000)
    parser.add_argument("--timeout", type=float, default=600, help="herd: give up after")
    parser.add_argument("--profile", action="store_true", help="py-spy the first herd")
    parser.add_argument(
        "--fires", type=int, default=1_000_000, help="forecast-db: the past day's sent fires"
    )
    parser.add_argument(
        "--backend",
        action="append",
        choices=["postgresql", "sqlite"],
        help="forecast-db: where (default both)",
    )
    parser.add_argument(
        "--source",
        action="append",
        choices=["stored", "config", "config-every"],
        help="memory: stored through the API, or synced from beat_schedule (default: both)",
    )
    parser.add_argument(
        "--database",
        choices=["postgresql", "mysql", "sqlite"],
        default="postgresql",
        help="herd, scaleout, steady: where celery-dbeat keeps the schedules (mysql: MariaDB too)",
    )
    parser.add_argument("--out", type=Path, default=WORKDIR / "results.jsonl")
    args = parser.parse_args(argv)
    # A SIGTERM (e.g. from `timeout`) unwinds like Ctrl-C, so every scenario still drops its
    # database, deletes its keys and stops its beats.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    WORKDIR.mkdir(parents=True, exist_ok=True)
    profile_dir = WORKDIR / "profiles" if args.profile else None
    rows: list[dict[str, Any]] = []
    started = time.time()

    def emit(new: list[dict[str, Any]]) -> None:
        rows.extend(new)
        _save(args.out, new)

    if args.scenario == "all":
        run_all(emit, args, profile_dir)
    elif args.scenario == "ceiling":
        for n in args.n or [10_000]:
            for producers in args.beats or [1]:
                emit(
                    herd.ceiling(
                        WORKDIR, n, repeats=args.repeats, timeout=args.timeout, producers=producers
                    )
                )
    elif args.scenario == "herd":
        for n in args.n or [10_000]:
            for system in args.system or ["dbeat"]:
                emit(
                    herd.herd(
                        WORKDIR,
                        system,
                        n,
                        repeats=args.repeats,
                        timeout=args.timeout,
                        profile_dir=profile_dir,
                        database=args.database,
                    )
                )
    elif args.scenario == "scaleout":
        beats = tuple(args.beats or [1, 2, 3])
        for n in args.n or [10_000]:
            emit(
                herd.herd(
                    WORKDIR, "dbeat", n, beats=beats, repeats=args.repeats, database=args.database
                )
            )
    elif args.scenario == "steady":
        for n in args.n or [100_000]:
            emit(
                steady.steady(
                    WORKDIR,
                    n,
                    warmup=args.warmup,
                    seconds=args.seconds,
                    edit_rate=args.edit_rate,
                    beats=(args.beats or [1])[0],
                    database=args.database,
                )
            )
    elif args.scenario == "idle":
        for n in args.n or [1_000, 100_000]:
            emit([steady.idle(WORKDIR, n, seconds=args.seconds)])
    elif args.scenario == "sync":
        for n in args.n or [100_000]:
            emit([edges.sync(WORKDIR, n)])
    elif args.scenario == "catchup":
        for n in args.n or [1_000]:
            emit([edges.catchup(WORKDIR, n, p) for p in ("skip", "latest", "earliest", "all")])
    elif args.scenario == "firstpass":
        emit([edges.firstpass(WORKDIR) for _ in range(args.repeats)])
    elif args.scenario == "backfill":
        for n in args.n or [10_000]:
            emit([edges.backfill(WORKDIR, n)])
    elif args.scenario == "limits":
        for n in args.n or [10_000, 100_000]:
            emit([limits.limits(WORKDIR, n)])
    elif args.scenario == "trigger":
        for n in args.n or [1_000]:
            emit([trigger.trigger(WORKDIR, n, args.repeats, redis_locks=r) for r in (True, False)])
    elif args.scenario == "outage":
        emit([load.outage(WORKDIR) for _ in range(args.repeats)])
    elif args.scenario == "overload":
        for n in args.n or [10_000]:
            emit(load.overload(WORKDIR, n, seconds=args.seconds))
    elif args.scenario == "cost":
        for n in args.n or [60_000]:
            emit([load.cost(WORKDIR, n, seconds=args.seconds)])
    elif args.scenario == "forecast":
        for n in args.n or [100_000]:
            emit([forecast.forecast(n, args.repeats)])
    elif args.scenario == "forecast-bounded":
        for n in args.n or [10_000]:
            emit([forecast.forecast_bounded(WORKDIR, n, args.repeats)])
    elif args.scenario == "forecast-db":
        backends = tuple(args.backend or ["postgresql", "sqlite"])
        for n in args.n or [100_000]:
            emit(
                forecast.forecast_db(WORKDIR, n, args.repeats, fires=args.fires, backends=backends)
            )
    elif args.scenario == "memory":
        for source in args.source or ["stored", "config"]:
            for n in args.n or [1_000, 100_000]:
                emit([memory.memory(WORKDIR, n, source, seconds=args.firing)])
    elif args.scenario == "slowstart":
        for n in args.n or [100_000]:
            emit([load.slowstart(WORKDIR, n)])
    print(f"\n{_machine()}; {time.time() - started:.0f} s\n")
    print(report.render(rows if args.scenario != "table" else _load(args.out)))


def run_all(emit: Any, args: argparse.Namespace, profile_dir: Path | None) -> None:
    """Every scenario at the issue's sizes, peers included, in one run (about 40 minutes)."""
    reps, timeout = args.repeats, args.timeout
    for n in (1_000, 10_000, 100_000):
        emit(herd.ceiling(WORKDIR, n, repeats=reps if n < 100_000 else 2, timeout=timeout))
        emit(
            herd.herd(
                WORKDIR,
                "dbeat",
                n,
                beats=(1, 2, 3) if n == 10_000 else (1,),
                repeats=reps if n < 100_000 else 2,
                timeout=timeout,
                profile_dir=profile_dir,
            )
        )
        emit(herd.herd(WORKDIR, "redbeat", n, repeats=reps if n < 100_000 else 1, timeout=timeout))
        if n <= 10_000:
            # django-celery-beat sends ~15/s at 10k: one repetition, cut off after 2 minutes.
            emit(herd.herd(WORKDIR, "django", n, repeats=1, timeout=120 if n > 1_000 else timeout))
    for n in (1_000, 100_000):
        emit([steady.idle(WORKDIR, n, seconds=60)])
    # 100k over the minute is ~1,667 fires/s, near this machine's publish ceiling; 20k (~333/s)
    # shows the lag of a beat with headroom.
    for n in (20_000, 100_000):
        emit(steady.steady(WORKDIR, n, seconds=args.seconds, edit_rate=args.edit_rate))


def _machine() -> str:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (
        f"{platform.node()}: {psutil.cpu_count()} cores, "
        f"{psutil.virtual_memory().total / 2**30:.0f} GiB, load average {load}"
    )
