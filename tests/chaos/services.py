"""Disposable services the chaos suite owns, so that it may restart, flush or cut them.

A ``redis-server`` for the per-fire locks, another one as the broker, and a PostgreSQL cluster
made with ``initdb`` and run with ``pg_ctl``, each on a free loopback port and in a temporary
directory, all removed afterwards. Run as root (a CI container), PostgreSQL runs as the
``postgres`` user through ``runuser``, since it refuses to run as root.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from glob import glob
from pathlib import Path

import redis
import sqlalchemy as sa

from tests.services import FakeTime, free_port


class ServiceMissing(Exception):
    """A server binary is not installed, or the server did not start."""


def _wait_for_port(port: int, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), 0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise ServiceMissing(
                    f"{what} did not listen on port {port} within {timeout} s"
                ) from None
            time.sleep(0.05)


def _binary(name: str, *patterns: str) -> str:
    found = shutil.which(name) or next(iter(sorted(p for g in patterns for p in glob(g))), None)
    if found is None:
        raise ServiceMissing(f"{name} not found on PATH")
    return found


class RedisServer:
    """One ``redis-server`` without persistence: a restart loses every key, like a crash."""

    def __init__(self, workdir: Path, name: str) -> None:
        self.binary = _binary("redis-server")
        self.port = free_port()
        self.name = name
        self.dir = workdir / name
        self.dir.mkdir(parents=True, exist_ok=True)
        self._popen: subprocess.Popen[bytes] | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        argv = [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(self.dir),
            "--maxmemory-policy",
            "noeviction",
        ]
        log = (self.dir / "redis.log").open("ab")
        self._popen = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        _wait_for_port(self.port, 10, f"redis-server {self.name}")

    def stop(self) -> None:
        """SIGKILL: no clean shutdown, nothing saved (there is nothing to save anyway)."""
        if self._popen is not None and self._popen.poll() is None:
            self._popen.send_signal(signal.SIGKILL)
            self._popen.wait(10)
        self._popen = None

    def restart(self, down_for: float = 0.0) -> None:
        self.stop()
        time.sleep(down_for)
        self.start()

    def flushall(self) -> None:
        client = redis.Redis.from_url(self.url)
        try:
            client.flushall()
        finally:
            client.close()

    def close(self) -> None:
        self.stop()


class PostgresCluster:
    """A throw-away PostgreSQL cluster (``initdb``) on a free port, trust authentication.

    With ``faketime``, the server runs under libfaketime: :attr:`clock` moves its wall clock
    (``clock.set("+330s")``), as if time had passed for everything that reads it.
    """

    def __init__(self, *, faketime: bool = False, options: dict[str, object] | None = None) -> None:
        """``options``: ``postgresql.conf`` settings over the ones for speed (no fsync); the
        benchmarks turn durability back on to measure what a fire costs a real server."""
        self.initdb = _binary("initdb", "/usr/lib/postgresql/*/bin/initdb")
        self.pg_ctl = _binary("pg_ctl", "/usr/lib/postgresql/*/bin/pg_ctl")
        self.port = free_port()
        # pytest's tmp dirs are private to root; the server's user must be able to write here.
        self.root = Path(tempfile.mkdtemp(prefix="dbeat-chaos-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self._as: list[str] = []
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                raise ServiceMissing("running as root but there is no 'postgres' user") from None
            os.chown(self.root, owner.pw_uid, owner.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]
        # The server's own user must read the clock file, so it lives in the cluster's folder.
        self.clock = FakeTime(self.root / "server.faketime") if faketime else None
        self._run(self.initdb, "-D", str(self.data), "-U", "postgres", "-A", "trust", "--no-sync")
        options = {
            "listen_addresses": "127.0.0.1",
            "port": self.port,
            "unix_socket_directories": str(self.root),
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "max_connections": 200,
            "log_min_messages": "warning",
            **(options or {}),
        }
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.writelines(f"{key} = '{value}'\n" for key, value in options.items())
        self.start()
        self.admin = sa.create_engine(
            self.url("postgres"), isolation_level="AUTOCOMMIT", poolclass=sa.NullPool
        )

    def _run(self, *argv: str, timeout: float = 60) -> None:
        env = None if self.clock is None else {**os.environ, **self.clock.env}
        result = subprocess.run(
            [*self._as, *argv], capture_output=True, timeout=timeout, cwd=self.root, env=env
        )
        if result.returncode:
            output = (result.stdout + result.stderr).decode(errors="replace")
            raise ServiceMissing(f"{' '.join(argv[:2])} failed ({result.returncode}): {output}")

    def url(self, database: str) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def _ctl(self, *args: str) -> None:
        self._run(self.pg_ctl, "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", *args)

    def start(self) -> None:
        self._ctl("start")

    def restart(self, mode: str = "fast") -> None:
        """``pg_ctl restart -m fast`` (clean) or ``immediate`` (a crash, then WAL recovery)."""
        self._ctl("restart", "-m", mode)

    def crash(self, down_for: float) -> None:
        """``pg_ctl stop -m immediate`` (no shutdown checkpoint), down ``down_for`` s, start."""
        self._ctl("stop", "-m", "immediate")
        time.sleep(down_for)
        self.start()

    def terminate_connections(self, database: str) -> int:
        """``pg_terminate_backend`` every session connected to ``database``; returns how many."""
        with self.admin.connect() as conn:
            killed = conn.execute(
                sa.text(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                    " WHERE datname = :name AND pid <> pg_backend_pid()"
                ),
                {"name": database},
            ).scalar_one()
        return int(killed)

    @contextlib.contextmanager
    def database(self) -> Iterator[tuple[str, str]]:
        """A fresh database, dropped afterwards. Yields ``(name, url)``."""
        name = f"chaos_{uuid.uuid4().hex[:10]}"
        with self.admin.connect() as conn:
            conn.execute(sa.text(f"CREATE DATABASE {name}"))
        try:
            yield name, self.url(name)
        finally:
            with self.admin.connect() as conn:
                conn.execute(sa.text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))

    def close(self) -> None:
        self.admin.dispose()
        with contextlib.suppress(ServiceMissing, subprocess.TimeoutExpired):
            self._ctl("stop", "-m", "immediate")
        shutil.rmtree(self.root, ignore_errors=True)
