"""The run's private resources and processes: a PostgreSQL database, a Redis key prefix, beats.

Everything is private to one :class:`Run` (``dbeat_bench_<random>``) and removed by ``close``:
the databases are dropped, every key under the prefix deleted, every process started killed.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]
import redis
import sqlalchemy as sa

from bench.app import ready_key

ROOT = Path(__file__).resolve().parents[1]
PG_SERVER = os.environ.get("BENCH_POSTGRES", "postgresql+psycopg://postgres@127.0.0.1:5432")
MYSQL_SERVER = os.environ.get(
    "BENCH_MYSQL", "mysql+pymysql://root@127.0.0.1:3306?ssl_disabled=true"
)
#: Where the scenarios that take ``--database`` keep their schedules (SQLite: a file in the
#: run's directory).
SERVERS = {"postgresql": PG_SERVER, "mysql": MYSQL_SERVER, "sqlite": "sqlite://"}
REDIS_URL = os.environ.get("BENCH_REDIS", "redis://127.0.0.1:6379/0")
SCHEDULERS = {
    "dbeat": "celery_dbeat.Scheduler",
    "redbeat": "redbeat.RedBeatScheduler",
    "django": "django_celery_beat.schedulers:DatabaseScheduler",
}


@dataclass
class Beat:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    started_at: float
    ps: psutil.Process = field(init=False)

    def __post_init__(self) -> None:
        self.ps = psutil.Process(self.popen.pid)

    def cpu(self) -> float:
        """CPU seconds (user + system) used so far."""
        times = self.ps.cpu_times()
        return float(times.user + times.system)

    def peak_rss_mb(self) -> float:
        """Peak resident set size (VmHWM), in MiB."""
        for line in Path(f"/proc/{self.popen.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def alive(self) -> bool:
        return self.popen.poll() is None

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


class Run:
    """One database (or SQLite file) and one key prefix for a scenario; ``close`` removes them."""

    def __init__(self, workdir: Path, label: str, *, server: str = PG_SERVER) -> None:
        """``server``: a PostgreSQL or MySQL/MariaDB URL without a database (default
        ``BENCH_POSTGRES``), or ``sqlite://``."""
        self.tag = f"dbeat_bench_{uuid.uuid4().hex[:8]}"
        self.label = label
        self.workdir = workdir / f"{label}-{self.tag}"
        self.workdir.mkdir(parents=True, exist_ok=True)
        url = sa.make_url(server)
        self.dialect = url.get_backend_name()
        database = str(self.workdir / "schedules.db") if self.dialect == "sqlite" else self.tag
        self.database_url = url.set(database=database).render_as_string(hide_password=False)
        self.redis_url = REDIS_URL
        self.prefix = f"{self.tag}:"
        self.queue = "bench"
        self.redis = redis.Redis.from_url(REDIS_URL)
        self.beats: list[Beat] = []
        self._admin: sa.Engine | None = None
        if self.dialect != "sqlite":
            admin = url.set(database="postgres" if self.dialect == "postgresql" else None)
            self._admin = sa.create_engine(
                admin, isolation_level="AUTOCOMMIT", poolclass=sa.NullPool
            )
            with self._admin.connect() as conn:
                conn.exec_driver_sql(f"CREATE DATABASE {self.tag}")
        self.engine = sa.create_engine(self.database_url, poolclass=sa.NullPool)

    # processes

    def env(self, scheduler: str, **extra: str) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
            PYTHONUNBUFFERED="1",
            BENCH_BROKER_URL=self.redis_url,
            BENCH_PREFIX=self.prefix,
            BENCH_QUEUE=self.queue,
            BENCH_SCHEDULER=scheduler,
            BENCH_DATABASE_URL=self.database_url,
            BENCH_DJANGO_DB=self.tag,
        )
        env.update(extra)
        return env

    def start_beat(
        self, scheduler: str = "dbeat", *, settings: dict[str, Any] | None = None, **extra: str
    ) -> Beat:
        name = f"{scheduler}-{len(self.beats)}"
        log = self.workdir / f"{name}.log"
        argv = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "bench.app",
            "beat",
            "-S",
            SCHEDULERS[scheduler],
            "--loglevel=WARNING",
            "--max-interval=5",
            f"--schedule={self.workdir / (name + '.schedule')}",
            f"--pidfile={self.workdir / (name + '.pid')}",
        ]
        env = self.env(scheduler, **extra)
        settings = dict(settings or {})
        settings.setdefault("dbeat_instance_name", name)
        env["BENCH_SETTINGS"] = json.dumps(settings)
        with log.open("wb") as out:
            popen = subprocess.Popen(
                argv, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        beat = Beat(name, popen, log, time.time())
        self.beats.append(beat)
        return beat

    def wait_ready(self, count: int, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while self.redis.llen(ready_key(self.prefix)) < count:
            for beat in self.beats:
                if not beat.alive():
                    raise RuntimeError(f"{beat.name} exited:\n{beat.tail()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"beats not ready after {timeout} s")
            time.sleep(0.05)

    def stop_beats(self) -> None:
        for beat in self.beats:
            if beat.alive():
                os.killpg(beat.popen.pid, signal.SIGTERM)
        for beat in self.beats:
            try:
                beat.popen.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(beat.popen.pid, signal.SIGKILL)
                beat.popen.wait(5)
        self.beats = []
        self.redis.delete(ready_key(self.prefix))

    # the broker

    @property
    def queue_key(self) -> str:
        return f"{self.prefix}{self.queue}"

    def queue_length(self) -> int:
        return int(self.redis.llen(self.queue_key))

    def wait_length(self, count: int, timeout: float, poll: float = 0.005) -> float | None:
        """Wall-clock time the queue first held ``count`` messages (``None`` on timeout)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.redis.llen(self.queue_key) >= count:
                return time.time()
            for beat in self.beats:
                if not beat.alive():
                    raise RuntimeError(f"{beat.name} exited:\n{beat.tail()}")
            time.sleep(poll)
        return None

    def messages(self) -> Iterator[dict[str, Any]]:
        """Every message on the queue (headers, and the decoded ``body`` as ``args``)."""
        total = self.queue_length()
        for start in range(0, total, 5000):
            for raw in self.redis.lrange(self.queue_key, start, start + 4999):
                yield decode(raw)

    def clear_queue(self) -> None:
        self.redis.delete(self.queue_key)

    def close(self) -> None:
        self.stop_beats()
        keys = list(self.redis.scan_iter(match=f"{self.prefix}*", count=5000))
        for start in range(0, len(keys), 5000):
            self.redis.delete(*keys[start : start + 5000])
        self.redis.close()
        self.engine.dispose()
        if self._admin is None:
            for path in self.workdir.glob("schedules.db*"):
                path.unlink()
            return
        with self._admin.connect() as conn:
            force = " WITH (FORCE)" if self.dialect == "postgresql" else ""
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {self.tag}{force}")
        self._admin.dispose()


def decode(raw: bytes) -> dict[str, Any]:
    """A kombu Redis message: ``headers`` (``id``, ``dbeat_slot``, ...) and ``args``."""
    message = json.loads(raw)
    headers: dict[str, Any] = message.get("headers") or {}
    body = json.loads(base64.b64decode(message["body"]))
    return {"headers": headers, "args": body[0] if isinstance(body, list) else None}
