"""Real ``celery beat`` and ``celery worker`` processes, and the ground truth they are judged by.

:class:`Harness` starts processes that load :mod:`tests.e2e.app` (one log file each), pauses,
kills and restarts them, and polls Redis, the broker (Redis or AMQP) and the database with
deadlines. :func:`judge` compares what the worker received with slots computed here by plain
arithmetic, not by celery-dbeat:

* a cron schedule's expected slots are the whole seconds of the window whose second-of-minute
  matches the (seconds-only) expression;
* an interval schedule's slots are ``first + n * every``; only the phase comes from the store.

The store's ``dbeat_fires`` rows are used only to map a received task id to its slot, since the
message itself does not carry the slot.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

import redis
import sqlalchemy as sa
from kombu import Connection

from tests.e2e.app import PUBLISHED_AT, is_redis_url, ready_key, received_key

REPO_ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")


class HarnessError(AssertionError):
    """A process died, or a condition was not met before its deadline."""


class DeadlineExceeded(HarnessError):
    """A polled condition was not met in time."""


def cron(expr: str) -> dict[str, Any]:
    return {"cron": expr}


def every(seconds: float) -> dict[str, Any]:
    return {"every": seconds}


# --- processes -------------------------------------------------------------------------------


@dataclass
class Proc:
    name: str
    role: str
    popen: subprocess.Popen[bytes]
    log_path: Path
    overrides: dict[str, Any]
    started_at: float
    #: False once the harness killed or stopped it on purpose.
    expect_alive: bool = True
    paused: bool = False
    #: Environment variables added for this process.
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])


@dataclass(frozen=True)
class Event:
    """Something the harness did to a process, with the wall-clock time it happened."""

    what: str
    proc: str
    at: float


class Harness:
    """Processes of one test.

    ``redis_url`` is the Redis of the per-fire locks. The broker is ``broker_url`` (default: the
    same Redis; or an AMQP broker such as RabbitMQ), which the worker and :meth:`queue_depth`
    use; beats publish to ``beat_broker_url`` (default: the broker), e.g. a proxy that can be
    cut. The worker's receipts and the readiness lists are written to ``receipts_url`` (default:
    the broker, which must then be a Redis), read through :attr:`redis`.

    On AMQP the test's private queue (:attr:`queue`) and the direct exchange of the same name
    are deleted by :meth:`close`; on Redis every key lives under ``prefix``, left to the caller.
    """

    def __init__(
        self,
        tmp_path: Path,
        database_url: str,
        redis_url: str,
        prefix: str,
        *,
        broker_url: str | None = None,
        beat_broker_url: str | None = None,
        receipts_url: str | None = None,
    ) -> None:
        self.tmp_path = tmp_path
        self.database_url = database_url
        self.redis_url = redis_url
        self.broker_url = broker_url or redis_url
        self.beat_broker_url = beat_broker_url or self.broker_url
        self.receipts_url = receipts_url or self.broker_url
        if not is_redis_url(self.receipts_url):
            raise ValueError(
                f"receipts_url={self.receipts_url!r}: the receipts need a Redis;"
                " pass receipts_url when the broker is not one"
            )
        self.prefix = prefix
        self.queue = f"e2e-{uuid.uuid4().hex[:10]}"
        #: The receipts' Redis (the broker's unless ``receipts_url`` was given).
        self.redis = redis.Redis.from_url(self.receipts_url)
        self._broker_redis: redis.Redis[bytes] | None = None
        self._amqp: Connection | None = None
        self.procs: list[Proc] = []
        self.events: list[Event] = []
        self.schedules: dict[str, dict[str, Any]] = {}
        self.settings: dict[str, Any] = {}
        self._engine: sa.Engine | None = None

    # configuration

    def configure(
        self, schedules: Mapping[str, dict[str, Any]], *, redis_locks: bool = True, **settings: Any
    ) -> None:
        """Schedules (see :func:`cron`, :func:`every`) and ``dbeat_*`` settings (without prefix)."""
        self.schedules = dict(schedules)
        self.settings = {
            "dbeat_database_url": self.database_url,
            "dbeat_redis_url": self.redis_url if redis_locks else None,
            "dbeat_redis_key_prefix": f"{self.prefix}dbeat:",
            "dbeat_max_interval": 1,
            # Short, so a killed beat's locks and leases expire within the test.
            "dbeat_lock_ttl": 3,
        }
        self.settings.update({f"dbeat_{key}": value for key, value in settings.items()})

    def _env(self, overrides: Mapping[str, Any], broker_url: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")])),
            PYTHONUNBUFFERED="1",
            # A process stop_all must kill prints where each of its threads stood first.
            PYTHONFAULTHANDLER="1",
            DBEAT_E2E_BROKER_URL=broker_url,
            DBEAT_E2E_RECEIPTS_URL=self.receipts_url,
            DBEAT_E2E_PREFIX=self.prefix,
            DBEAT_E2E_QUEUE=self.queue,
            DBEAT_E2E_SETTINGS=json.dumps({**self.settings, **overrides}),
            DBEAT_E2E_SCHEDULES=json.dumps(self.schedules),
        )
        return env

    def _spawn(
        self,
        name: str,
        role: str,
        args: list[str],
        overrides: dict[str, Any],
        env: Mapping[str, str] | None = None,
    ) -> Proc:
        starts = sum(1 for p in self.procs if p.name == name)
        stem = f"{name}.{starts}" if starts else name
        log_path = self.tmp_path / f"{stem}.log"
        argv = [sys.executable, "-m", "celery", "-A", "tests.e2e.app", *args]
        argv.append(f"--pidfile={self.tmp_path / (stem + '.pid')}")
        with log_path.open("wb") as log:
            popen = subprocess.Popen(
                argv,
                cwd=REPO_ROOT,
                env={
                    **self._env(
                        overrides, self.beat_broker_url if role == "beat" else self.broker_url
                    ),
                    **(env or {}),
                },
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        proc = Proc(name, role, popen, log_path, overrides, time.time(), env=dict(env or {}))
        self.procs.append(proc)
        self.events.append(Event("start", name, proc.started_at))
        return proc

    def start_worker(self) -> Proc:
        args = [
            "worker",
            "--pool=solo",
            "--loglevel=INFO",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            f"--hostname={self.queue}@%h",
        ]
        return self._spawn("worker", "worker", args, {})

    def start_beat(
        self, name: str, *, env: Mapping[str, str] | None = None, **settings: Any
    ) -> Proc:
        """A beat whose ``dbeat_instance_name`` is ``name``; ``settings`` override (no prefix),
        ``env`` adds environment variables (e.g. libfaketime's)."""
        overrides = {f"dbeat_{key}": value for key, value in settings.items()}
        overrides["dbeat_instance_name"] = name
        args = [
            "beat",
            "-S",
            "celery_dbeat.Scheduler",
            "--loglevel=INFO",
            f"--schedule={self.tmp_path / (name + '.schedule')}",
        ]
        return self._spawn(name, "beat", args, overrides, env)

    def beats(self) -> list[Proc]:
        return [p for p in self.procs if p.role == "beat" and p.expect_alive]

    # signals

    def _signal(self, proc: Proc, sig: signal.Signals, what: str) -> float:
        at = time.time()
        os.kill(proc.pid, sig)
        self.events.append(Event(what, proc.name, at))
        return at

    def kill(self, proc: Proc) -> float:
        """SIGKILL: no clean-up at all. Returns the time of the kill."""
        proc.expect_alive = False
        at = self._signal(proc, signal.SIGKILL, "kill")
        proc.popen.wait(10)
        return at

    def pause(self, proc: Proc) -> float:
        proc.paused = True
        return self._signal(proc, signal.SIGSTOP, "pause")

    def resume(self, proc: Proc) -> float:
        proc.paused = False
        return self._signal(proc, signal.SIGCONT, "resume")

    @contextlib.contextmanager
    def held(self, procs: Iterable[Proc]) -> Iterator[None]:
        """SIGSTOP ``procs`` for the block (e.g. so that one other beat does the work)."""
        procs = list(procs)
        for proc in procs:
            self.pause(proc)
        try:
            yield
        finally:
            for proc in procs:
                self.resume(proc)

    def stop(self, proc: Proc, timeout: float = 10) -> None:
        """SIGTERM (a clean shutdown), then SIGKILL after ``timeout``."""
        proc.expect_alive = False
        if not proc.alive():
            return
        if proc.paused:
            self.resume(proc)
        self._signal(proc, signal.SIGTERM, "stop")
        try:
            proc.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self._signal(proc, signal.SIGKILL, "kill")
            proc.popen.wait(10)

    def stop_all(self, procs: Iterable[Proc], timeout: float = 10) -> list[Proc]:
        """SIGTERM ``procs`` at once, then kill those still running after ``timeout``: SIGABRT
        first, on which Python's faulthandler writes every thread's stack to the log, then
        SIGKILL.

        Returns the ones that had to be killed."""
        procs = [p for p in procs if p.alive()]
        for proc in procs:
            proc.expect_alive = False
            if proc.paused:
                self.resume(proc)
            self._signal(proc, signal.SIGTERM, "stop")
        deadline = time.monotonic() + timeout
        killed = []
        for proc in procs:
            try:
                proc.popen.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self._signal(proc, signal.SIGABRT, "abort")
                try:
                    proc.popen.wait(5)
                except subprocess.TimeoutExpired:
                    self._signal(proc, signal.SIGKILL, "kill")
                    proc.popen.wait(10)
                killed.append(proc)
        return killed

    def restart(self, proc: Proc, name: str | None = None) -> Proc:
        """A new beat with ``proc``'s settings under ``name``: a new instance, as after a reboot."""
        if proc.alive():
            self.kill(proc)
        overrides = {k.removeprefix("dbeat_"): v for k, v in proc.overrides.items()}
        overrides.pop("instance_name", None)
        return self.start_beat(name or proc.name, env=proc.env, **overrides)

    def close(self) -> None:
        """Kill every process; on AMQP delete the private queue and exchange (the broker
        outlives the test). Idempotent."""
        for proc in self.procs:
            if proc.alive():
                proc.expect_alive = False
                os.kill(proc.pid, signal.SIGKILL)
                proc.popen.wait(10)
        if self._engine is not None:
            self._engine.dispose()
        try:
            if not is_redis_url(self.broker_url):
                self._delete_amqp_queue()
        finally:
            if self._amqp is not None:
                self._amqp.release()
                self._amqp = None
            if self._broker_redis is not None:
                self._broker_redis.close()
            self.redis.close()

    def _amqp_connection(self) -> Connection:
        if self._amqp is None:
            self._amqp = Connection(self.broker_url, connect_timeout=5)
        return self._amqp

    def _delete_amqp_queue(self) -> None:
        # One channel each: RabbitMQ closes a channel on any error (a 404, for instance).
        connection = self._amqp_connection()
        for method in ("queue_delete", "exchange_delete"):
            channel: Any = connection.channel()
            try:
                getattr(channel, method)(self.queue)
            except connection.channel_errors:
                pass  # already gone (an older RabbitMQ answers 404)
            finally:
                with contextlib.suppress(*connection.channel_errors):
                    channel.close()

    def log_tails(self, lines: int = 40) -> str:
        parts = []
        for proc in self.procs:
            status = "running" if proc.alive() else f"exit {proc.popen.returncode}"
            parts.append(f"----- {proc.log_path.name} (pid {proc.pid}, {status}) -----")
            parts.append(proc.tail(lines))
        return "\n".join(parts)

    # waiting

    def check_alive(self) -> None:
        for proc in self.procs:
            if proc.expect_alive and not proc.alive():
                raise HarnessError(
                    f"{proc.name} exited with {proc.popen.returncode}:\n{proc.tail()}"
                )

    def wait_until(
        self,
        condition: Callable[[], T | None],
        *,
        timeout: float,
        what: str,
        interval: float = 0.1,
    ) -> T:
        """Poll ``condition`` until truthy; fail after ``timeout`` s or if a process dies."""
        deadline = time.monotonic() + timeout
        while True:
            self.check_alive()
            result = condition()
            if result:
                return result
            if time.monotonic() > deadline:
                raise DeadlineExceeded(f"timed out after {timeout:g} s waiting for {what}")
            time.sleep(interval)

    def run_for(self, seconds: float) -> None:
        """Let the processes work for ``seconds``, failing early if one dies."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.check_alive()
            time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))

    def sleep_until_phase(self, phase: float, period: int = 2) -> None:
        """Sleep until the next wall-clock instant ``t`` with ``t % period == phase``."""
        now = time.time()
        target = ((now - phase) // period + 1) * period + phase
        self.run_for(target - now)

    def ready(self) -> list[dict[str, Any]]:
        return [json.loads(raw) for raw in self.redis.lrange(ready_key(self.prefix), 0, -1)]

    def wait_ready(
        self, procs: Iterable[Proc] | None = None, timeout: float = 60, *, received: bool = True
    ) -> float:
        """Wait until ``procs`` (default: every live process) finished starting and (unless
        not ``received``: no worker runs) every schedule reached the worker once. Returns the
        time that happened."""
        pids = {p.pid for p in (procs if procs is not None else self.procs) if p.expect_alive}
        self.wait_until(
            lambda: pids <= {e["pid"] for e in self.ready()},
            timeout=timeout,
            what=f"processes {sorted(pids)} to start",
        )
        if not received:
            return time.time()
        self.wait_until(
            lambda: set(self.schedules) <= {r.schedule for r in self.received()},
            timeout=timeout,
            what="a first message of every schedule",
        )
        return time.time()

    def wait_ticking(self, procs: Iterable[Proc], timeout: float = 60) -> None:
        """Wait until each of ``procs`` (beats) has ticked: its heartbeat row, which a beat
        writes in its first tick, is in ``dbeat_beats``."""
        names = {p.name for p in procs}
        self.wait_until(
            lambda: names <= self.heartbeats(), timeout=timeout, what=f"{sorted(names)} to tick"
        )

    def wait_listening(self, count: int, timeout: float = 60) -> None:
        """Wait until ``count`` beats wait on change notifications (:meth:`listening`): each
        has ticked and subscribes once its first tick is over, so a write from now on wakes it."""
        self.wait_until(
            lambda: self.listening() >= count,
            timeout=timeout,
            what=f"{count} beat(s) to wait on change notifications",
        )

    # observations

    def heartbeats(self) -> set[str]:
        """The names in ``dbeat_beats`` (none before the first beat migrated the database)."""
        try:
            with self.engine.connect() as conn:
                return set(conn.execute(sa.text("SELECT name FROM dbeat_beats")).scalars())
        except (sa.exc.ProgrammingError, sa.exc.OperationalError):
            return set()

    def listening(self) -> int:
        """How many beats wait on change notifications: subscribers of the Redis channel when
        the beats use Redis (``dbeat_redis_url``), else sessions that ``LISTEN`` on this
        PostgreSQL database."""
        redis_url = self.settings.get("dbeat_redis_url")
        if redis_url:
            channel = f"{self.settings['dbeat_redis_key_prefix']}changes"
            client = redis.Redis.from_url(redis_url)
            try:
                counts = client.pubsub_numsub(channel)  # [(channel, subscribers)]
                return int(counts[0][1]) if counts else 0
            finally:
                client.close()
        query = sa.text(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND query LIKE 'LISTEN %'"
        )
        with self.engine.connect() as conn:
            return int(conn.execute(query).scalar_one())

    def received(self) -> list[Receipt]:
        raw = self.redis.lrange(received_key(self.prefix), 0, -1)
        return [Receipt.from_json(entry) for entry in raw]

    def queue_depth(self) -> int:
        """Messages waiting in the private queue: its Redis list's length, or on AMQP the
        ``message_count`` of a passive ``queue.declare`` (ready messages, not those delivered
        and not yet acknowledged); 0 before the queue exists."""
        if is_redis_url(self.broker_url):
            if self._broker_redis is None:
                self._broker_redis = redis.Redis.from_url(self.broker_url)
            return int(self._broker_redis.llen(f"{self.prefix}{self.queue}"))
        connection = self._amqp_connection()
        channel: Any = connection.channel()
        try:
            declared = channel.queue_declare(queue=self.queue, passive=True)
        except connection.channel_errors:
            return 0  # 404: not declared yet (the channel is closed by the broker)
        with contextlib.suppress(*connection.channel_errors):
            channel.close()
        return int(declared.message_count)

    def queued_task_ids(self) -> list[str]:
        """The task id of every message waiting in the private queue (a Redis broker with no
        worker consuming it), oldest first: what the beats published, each copy counted."""
        if not is_redis_url(self.broker_url):
            raise ValueError("queued_task_ids reads a Redis broker's list")
        if self._broker_redis is None:
            self._broker_redis = redis.Redis.from_url(self.broker_url)
        raw = self._broker_redis.lrange(f"{self.prefix}{self.queue}", 0, -1)
        # LPUSH puts the newest first.
        return [json.loads(message)["headers"]["id"] for message in reversed(raw)]

    @property
    def engine(self) -> sa.Engine:
        if self._engine is None:
            self._engine = sa.create_engine(self.database_url, poolclass=sa.NullPool)
        return self._engine

    def fires(self) -> list[FireRow]:
        query = sa.text(
            "SELECT s.name, f.slot, f.manual, f.status, f.task_id, f.beat, f.attempts,"
            " f.recorded_at, f.sent_at"
            " FROM dbeat_fires f JOIN dbeat_schedules s ON s.id = f.schedule_id ORDER BY f.slot"
        )
        with self.engine.connect() as conn:
            return [FireRow.from_row(row) for row in conn.execute(query)]

    def schedule_rows(self) -> list[dict[str, Any]]:
        query = sa.text(
            "SELECT name, next_run_at, last_slot, run_count, last_error"
            " FROM dbeat_schedules ORDER BY name"
        )
        with self.engine.connect() as conn:
            return [dict(row._mapping) for row in conn.execute(query)]

    def drain(self, quiet: float = 1.5, timeout: float = 20) -> None:
        """Wait until the queue is empty and the worker received nothing for ``quiet`` s."""
        state = {"count": -1, "since": time.monotonic()}

        def settled() -> bool:
            count = len(self.received())
            if count != state["count"] or self.queue_depth():
                state.update(count=count, since=time.monotonic())
                return False
            return time.monotonic() - state["since"] >= quiet

        self.wait_until(settled, timeout=timeout, what="the queue to drain", interval=0.2)

    def finish(
        self,
        window_start: float,
        *,
        margin: float = 3,
        excuse_kills: bool = False,
        excuse_pauses_over: float | None = None,
    ) -> Verdict:
        """End the run: judge slots in ``[window_start, now - margin]``.

        Waits (bounded) for every expected slot of the window to arrive, stops the beats with
        SIGTERM, drains the queue, stops the worker, then judges everything received.
        """
        window = (window_start, time.time() - margin)
        with contextlib.suppress(DeadlineExceeded):  # judged below, listing what is missing
            self.wait_until(
                lambda: not self.judge(window).lost,
                timeout=20,
                what="every slot of the window",
                interval=0.5,
            )
        for proc in self.beats():
            self.stop(proc)
        self.drain()
        for proc in self.procs:
            if proc.role == "worker":
                self.stop(proc)
        fires, receipts = self.fires(), self.received()
        evidence = {
            "events": [asdict(e) for e in self.events],
            "fires": [asdict(f) for f in fires],
            "received": [asdict(r) for r in receipts],
            "schedules": self.schedule_rows(),
        }
        (self.tmp_path / "evidence.json").write_text(json.dumps(evidence, indent=1, default=str))
        verdict = judge(
            self.schedules,
            fires,
            receipts,
            window,
            self.events,
            excuse_kills=excuse_kills,
            excuse_pauses_over=excuse_pauses_over,
        )
        print(verdict.summary())
        return verdict

    def judge(self, window: tuple[float, float]) -> Verdict:
        return judge(self.schedules, self.fires(), self.received(), window, self.events)


# --- ground truth ----------------------------------------------------------------------------


def parse_seconds_field(text: str) -> set[int]:
    """Seconds of the minute a cron seconds field matches (``*``, ``a``, ``a-b``, ``/n``, ``,``)."""
    seconds: set[int] = set()
    for part in text.split(","):
        base, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if base == "*":
            low, high = 0, 59
        elif "-" in base:
            low, high = (int(x) for x in base.split("-"))
        else:
            low = int(base)
            high = 59 if step_text else low
        seconds.update(range(low, high + 1, step))
    return seconds


def cron_slots(expr: str, start: float, end: float) -> list[float]:
    """Slots of a seconds-only cron (``* * * * * S``, seconds last) in ``[start, end]``."""
    fields = expr.split()
    if len(fields) != 6 or fields[:5] != ["*"] * 5:
        raise ValueError(f"ground truth only knows '* * * * * <seconds>', not {expr!r}")
    matching = parse_seconds_field(fields[5])
    first = int(start) + (start > int(start))
    return [float(t) for t in range(first, int(end) + 1) if t % 60 in matching]


def interval_slots(first: float, every_s: float, start: float, end: float) -> list[float]:
    n = max(0, int((start - first) // every_s))
    slots = []
    while (t := first + n * every_s) <= end:
        if t >= start:
            slots.append(t)
        n += 1
    return slots


def _epoch(value: Any) -> float:
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return float(value.timestamp())


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).strftime("%H:%M:%S.%f")[:-3]


@dataclass(frozen=True)
class Receipt:
    task_id: str
    schedule: str
    received_at: float
    worker: str
    #: The message's ``dbeat_slot`` header, if the scheduler sets one (cross-checked only).
    slot_header: float | None
    #: When the beat published it (tests/e2e/app.py's header; ``None`` if it has none).
    published_at: float | None = None

    @property
    def sent_at(self) -> float:
        """When it was published, or else received: the instant a copy is judged by."""
        return self.received_at if self.published_at is None else self.published_at

    @classmethod
    def from_json(cls, raw: bytes) -> Receipt:
        d = json.loads(raw)
        extra = d.get("extra", {})
        header = extra.get("dbeat_slot")
        slot = None if header is None else _epoch(header)
        published = extra.get(PUBLISHED_AT)
        return cls(
            d["task_id"],
            d["schedule"],
            d["received_at"],
            d["worker"],
            slot,
            None if published is None else float(published),
        )


@dataclass(frozen=True)
class FireRow:
    schedule: str
    slot: float
    manual: bool
    status: str
    task_id: str | None
    beat: str | None
    attempts: int
    recorded_at: float
    sent_at: float | None

    @classmethod
    def from_row(cls, row: Any) -> FireRow:
        name, slot, manual, status, task_id, beat, attempts, recorded_at, sent_at = row
        return cls(
            name,
            _epoch(slot),
            bool(manual),
            status,
            task_id,
            beat,
            attempts or 0,
            _epoch(recorded_at),
            None if sent_at is None else _epoch(sent_at),
        )

    def describe(self) -> str:
        sent = "-" if self.sent_at is None else _iso(self.sent_at)
        return (
            f"{self.schedule}@{_iso(self.slot)} status={self.status} id={self.task_id}"
            f" beat={self.beat} attempts={self.attempts} recorded_at={_iso(self.recorded_at)}"
            f" sent_at={sent}"
        )


@dataclass
class Verdict:
    window: tuple[float, float]
    expected: int = 0
    received: int = 0
    duplicates: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    repeats: list[str] = field(default_factory=list)
    excused: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    lags: dict[str, list[float]] = field(default_factory=dict)

    def problems(self) -> list[str]:
        return [*self.duplicates, *self.lost, *self.repeats, *self.wrong]

    def summary(self) -> str:
        lines = [
            f"window {_iso(self.window[0])}..{_iso(self.window[1])} UTC: {self.expected} slots"
            f" expected, {self.received} messages received; duplicates {len(self.duplicates)},"
            f" lost {len(self.lost)}, repeated ids {len(self.repeats)}"
            f" (+{len(self.excused)} excused), other problems {len(self.wrong)}"
        ]
        for name, lags in sorted(self.lags.items()):
            if lags:
                lags = sorted(lags)
                lines.append(
                    f"  lag {name}: median {lags[len(lags) // 2]:.3f} s,"
                    f" worst {lags[-1]:.3f} s over {len(lags)} messages"
                )
        lines += [f"  {p}" for p in [*self.problems(), *(f"excused: {e}" for e in self.excused)]]
        return "\n".join(lines)


def _within_long_pause(events: list[Event], times: list[float], lease: float) -> bool:
    """Both copies fall between a pause longer than ``lease`` and shortly after its resume."""
    for pause in (e for e in events if e.what == "pause"):
        resume = next(
            (e for e in events if e.what == "resume" and e.proc == pause.proc and e.at > pause.at),
            None,
        )
        if resume is None or resume.at - pause.at <= lease:
            continue
        if pause.at - 1 <= times[0] and times[-1] <= resume.at + 2:
            return True
    return False


def judge(
    schedules: Mapping[str, dict[str, Any]],
    fires: list[FireRow],
    receipts: list[Receipt],
    window: tuple[float, float],
    events: Iterable[Event] = (),
    *,
    excuse_kills: bool = False,
    excuse_pauses_over: float | None = None,
) -> Verdict:
    """Exactly once: every expected slot of ``window`` received once, nothing received twice.

    ``events`` (what the harness did to the processes) annotate each id received twice. With
    ``excuse_kills``, such an id is excused when its first copy was published within a second of
    a SIGKILL and the second after it: the documented crash window (published, killed before the
    fire was marked sent, published again by another beat with the same id). With
    ``excuse_pauses_over`` (the lease, in seconds), such an id is excused when both copies were
    published while a beat was paused for longer than that, or just after it resumed: the other
    documented window (paused after its last lease check and before marking the fire sent).
    Copies are placed by when they were published (the ``dbeat_e2e_published_at`` header), not
    by when the worker ran them.
    """
    events = list(events)
    verdict = Verdict(window, received=len(receipts))
    start, end = window
    by_id: dict[str, FireRow] = {}
    slots_of: dict[str, list[FireRow]] = defaultdict(list)
    for row in fires:
        if row.manual:
            verdict.wrong.append(f"unexpected manual fire {row.describe()}")
            continue
        if row.task_id in by_id:
            verdict.wrong.append(f"task id shared by two fires: {row.describe()}")
        if row.task_id:
            by_id[row.task_id] = row
        slots_of[row.schedule].append(row)
        spec = schedules.get(row.schedule, {})
        if "cron" in spec and not cron_slots(spec["cron"], row.slot, row.slot):
            verdict.wrong.append(f"fire at a slot the cron does not have: {row.describe()}")
        if start <= row.slot <= end and row.status != "sent":
            verdict.wrong.append(f"fire in the window not sent: {row.describe()}")

    copies: dict[str, list[Receipt]] = defaultdict(list)
    for receipt in receipts:
        copies[receipt.task_id].append(receipt)
    ids_per_slot: dict[tuple[str, float], set[str]] = defaultdict(set)
    for task_id, got in copies.items():
        fire = by_id.get(task_id)
        if fire is None:
            # Most likely a second publish of some slot under an id the store does not know.
            verdict.duplicates.append(f"received {got[0].schedule} id {task_id}, no fire has it")
            continue
        if got[0].schedule != fire.schedule:
            verdict.wrong.append(f"id {task_id} received for {got[0].schedule}: {fire.describe()}")
        ids_per_slot[(fire.schedule, fire.slot)].add(task_id)
        if any(r.slot_header is not None and r.slot_header != fire.slot for r in got):
            verdict.wrong.append(f"message slot header differs from {fire.describe()}")
        first = min(r.received_at for r in got)
        verdict.lags.setdefault(fire.schedule, []).append(first - fire.slot)
        if first < fire.slot - 0.05:
            verdict.wrong.append(
                f"ran {fire.slot - first:.3f} s before its slot: {fire.describe()}"
            )
        if len(got) > 1:
            # By when each copy was published: a busy worker may run them many seconds later.
            times = sorted(r.sent_at for r in got)
            around = [
                f"{e.what} {e.proc} {_iso(e.at)}"
                for e in events
                if times[0] - 1 <= e.at <= times[-1] and e.what != "start"
            ]
            text = (
                f"id published {len(got)} times at {', '.join(map(_iso, times))}: {fire.describe()}"
                f" [harness meanwhile: {', '.join(around) or 'nothing'}]"
            )
            if (
                excuse_kills
                and len(got) == 2
                and any(
                    e.what == "kill" and e.at - 2 <= times[0] <= e.at + 1 and times[1] > e.at
                    for e in events
                )
            ) or (
                excuse_pauses_over is not None
                and len(got) == 2
                and _within_long_pause(events, times, excuse_pauses_over)
            ):
                verdict.excused.append(text)
            else:
                verdict.repeats.append(text)
    for (name, slot), ids in ids_per_slot.items():
        if len(ids) > 1:
            verdict.duplicates.append(f"{name}@{_iso(slot)} received under ids {sorted(ids)}")
    for row in fires:
        if row.status == "sent" and row.task_id not in copies:
            verdict.lost.append(f"marked sent but never received: {row.describe()}")

    got_slots: dict[str, list[float]] = defaultdict(list)
    for name, slot in ids_per_slot:
        got_slots[name].append(slot)
    for name, spec in schedules.items():
        recorded = sorted(r.slot for r in slots_of[name])
        if "cron" in spec:
            expected = cron_slots(spec["cron"], start, end)
        elif not recorded:
            verdict.lost.append(f"{name}: no fire recorded at all")
            continue
        else:
            step = float(spec["every"])
            expected = interval_slots(recorded[0], step, start, end)
            for slot in recorded:
                if abs((slot - recorded[0]) / step - round((slot - recorded[0]) / step)) > 1e-3:
                    verdict.wrong.append(f"{name}: slot {_iso(slot)} is off the interval grid")
        verdict.expected += len(expected)
        for slot in expected:
            if not any(abs(slot - s) < 1e-3 for s in got_slots[name]):
                rows = [r.describe() for r in slots_of[name] if abs(r.slot - slot) < 1e-3]
                verdict.lost.append(
                    f"{name}@{_iso(slot)} never received ({'; '.join(rows) or 'no fire row'})"
                )
    return verdict
