"""One chaos scenario: its processes, its faults, and the verdict on what reached the broker.

:class:`Chaos` wraps the end-to-end :class:`~tests.e2e.harness.Harness` (real ``celery beat``
and ``celery worker`` processes) with the disposable services of :mod:`tests.chaos.services`,
which it may restart, flush or cut, and judges the run with :func:`tests.chaos.truth.judge`.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from celery import Celery

from celery_dbeat.beat_schedule import definitions_from_app
from celery_dbeat.store import Store, migrate
from celery_dbeat.store.sync import sync_config
from tests.chaos.services import PostgresCluster, RedisServer
from tests.chaos.truth import Message, Outcome, Slot, hms, judge
from tests.e2e.app import beat_schedule, received_key
from tests.e2e.harness import DeadlineExceeded, Event, Harness, Proc
from tests.proxy import Proxy

#: A beat's settings on top of the harness's (``lock_ttl=3``, ``max_interval=1``).
BeatSpec = tuple[str, Mapping[str, Any]]
#: The three beats of a scenario.
BEATS: list[BeatSpec] = [(f"beat-{n}", {}) for n in (1, 2, 3)]
#: Seconds a beat gets to exit after SIGTERM at the end of a scenario.
STOP_TIMEOUT = 2.0


@dataclass
class Services:
    locks: RedisServer
    broker: RedisServer
    postgres: PostgresCluster

    def close(self) -> None:
        self.postgres.close()
        self.broker.close()
        self.locks.close()


class Chaos:
    def __init__(
        self,
        scenario: str,
        services: Services,
        harness: Harness,
        database: str,
        proxy: Proxy | None,
        record: Callable[[Outcome], None],
    ) -> None:
        self.scenario = scenario
        self.services = services
        self.harness = harness
        self.database = database
        self.proxy = proxy
        self._record = record
        self.started = time.monotonic()
        self.schedules: dict[str, dict[str, Any]] = {}
        #: Every message judged by :meth:`finish`.
        self.judged: list[Message] = []

    # set-up -----------------------------------------------------------------------------------

    def configure(self, schedules: Mapping[str, dict[str, Any]], **settings: Any) -> None:
        """The scenario's schedules and settings; the schedules are stored at once, as the
        beats will sync them (``beat_schedule``), so they exist before their ``start_at`` however
        long the processes take to start (a schedule created after its ``start_at`` rightly
        skips the slots before its creation)."""
        self.schedules = dict(schedules)
        self.harness.configure(self.schedules, redis_locks=True, **settings)
        config = Celery("dbeat_chaos_setup", set_as_current=False)
        config.conf.beat_schedule = beat_schedule(self.schedules)
        store = Store(self.harness.database_url)
        try:
            migrate(store.engine)
            sync_config(store, definitions_from_app(config), datetime.now(timezone.utc))
        finally:
            store.close()

    @staticmethod
    def start_at(lead: float) -> float:
        """A whole second at least ``lead`` s from now: the first instant any slot may have."""
        return float(math.ceil(time.time() + lead))

    def start(self, beats: Iterable[BeatSpec], *, worker: bool = True) -> list[Proc]:
        """Start a worker (if ``worker``) and the beats; wait until each finished starting."""
        procs = []
        if worker:
            procs.append(self.harness.start_worker())
        procs += [self.harness.start_beat(name, **settings) for name, settings in beats]
        self.wait_started(procs)
        return procs

    def wait_started(self, procs: Iterable[Proc], timeout: float = 60) -> float:
        """Wait until ``procs`` announced themselves; returns the newest announcement time."""
        pids = {p.pid for p in procs}

        def announced() -> float | None:
            times = [e["at"] for e in self.harness.ready() if e["pid"] in pids]
            return max(times) if len(times) == len(pids) else None

        return self.harness.wait_until(announced, timeout=timeout, what=f"processes {sorted(pids)}")

    def ready_at(self, proc: Proc) -> float:
        return float(next(e["at"] for e in self.harness.ready() if e["pid"] == proc.pid))

    # faults -----------------------------------------------------------------------------------

    def mark(self, what: str, who: str) -> None:
        """Note a fault in the event list (shown next to any repeated id)."""
        self.harness.events.append(Event(what, who, time.time()))

    def run_until(self, deadline: float) -> None:
        """Let everything run until the wall-clock instant ``deadline``."""
        self.harness.run_for(max(0.0, deadline - time.time()))

    # observations -----------------------------------------------------------------------------

    def messages(self) -> list[Message]:
        raw = self.harness.redis.lrange(received_key(self.harness.prefix), 0, -1)
        return [Message.from_record(entry) for entry in raw]

    def left_in_queue(self) -> list[Message]:
        """Messages no worker took: still queued, or delivered and not acknowledged."""
        client, prefix = self.harness.redis, self.harness.prefix
        raw = list(client.lrange(f"{prefix}{self.harness.queue}", 0, -1))
        raw += list(client.hvals(f"{prefix}unacked"))
        return [Message.from_queue(entry) for entry in raw]

    def wait_received(self, expected: Mapping[str, Iterable[Slot]], timeout: float) -> None:
        """Wait (bounded) until every expected fire reached the worker; judged afterwards."""
        wanted = {(name, round(t, 6)) for name, ts in expected.items() for t in ts}

        def arrived() -> bool:
            got = {(m.schedule, m.slot) for m in self.messages()}
            return wanted <= got

        try:
            self.harness.wait_until(
                arrived, timeout=timeout, what="every expected fire", interval=0.5
            )
        except DeadlineExceeded as exc:
            print(f"{self.scenario}: {exc}; judging what arrived")

    # the verdict ------------------------------------------------------------------------------

    def finish(
        self,
        expected: Mapping[str, Iterable[Slot]],
        *,
        judged_until: float,
        wait: float = 30,
        notes: Iterable[str] = (),
        **judge_options: Any,
    ) -> Outcome:
        """Wait for the expected fires, stop every process, and judge all that was published."""
        self.wait_received(expected, wait)
        beats = {p.name for p in self.harness.procs if p.role == "beat"}
        # SIGTERM is a clean stop (Celery's handler closes the scheduler, then raises
        # SystemExit); a beat still running a little later is killed, and the note says so.
        stubborn = self.harness.stop_all(self.harness.beats(), timeout=STOP_TIMEOUT)
        if stubborn:
            notes = [
                *notes,
                f"{len(stubborn)} beat(s) still running {STOP_TIMEOUT:g} s after SIGTERM"
                f" ({', '.join(sorted(p.name for p in stubborn))}), SIGKILLed",
            ]
        try:
            self.harness.drain(quiet=1.0, timeout=20)
        except DeadlineExceeded as exc:
            print(f"{self.scenario}: {exc}")
        for proc in self.harness.procs:
            if proc.role == "worker":
                self.harness.stop(proc)
        left = self.left_in_queue()
        messages = self.judged = self.messages() + left
        with self.harness.engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT name, uid FROM dbeat_schedules")).all()
        uids = {str(name): str(uid) for name, uid in rows}
        outcome = judge(
            self.scenario,
            self.schedules,
            messages,
            expected,
            uids=uids,
            judged_until=judged_until,
            beats=len(beats),
            events=self.harness.events,
            lease=float(self.harness.settings["dbeat_lock_ttl"]),
            **judge_options,
        )
        outcome.notes += list(notes)
        if left:
            outcome.notes.append(f"{len(left)} message(s) were left in the queue")
        outcome.seconds = time.monotonic() - self.started
        self._record(outcome)
        self._save_evidence(messages, outcome)
        print(outcome.summary())
        return outcome

    def _save_evidence(self, messages: list[Message], outcome: Outcome) -> None:
        path: Path = self.harness.tmp_path / "evidence.json"
        evidence = {
            "events": [dict(asdict(e), at_utc=hms(e.at)) for e in self.harness.events],
            "messages": [asdict(m) for m in messages],
            "outcome": asdict(outcome),
        }
        path.write_text(json.dumps(evidence, indent=1, default=str))


#: The ``chaos`` fixture: ``chaos(broker_proxy=False)`` makes a :class:`Chaos`.
ChaosFactory = Callable[..., Chaos]
