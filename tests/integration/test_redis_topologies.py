"""The Redis lock, change notifications and the eviction check on every Redis deployment users run.

Each topology is a real, disposable ``redis-server`` started here on free loopback ports (the
shared Redis is never touched): an ACL user over TCP and over a Unix socket, TLS with client
certificates (files given in the URL's query and in ``dbeat_redis_options``), a master and a
replica behind a password-protected Sentinel (failed over in the last test), and a 3-master
cluster. On each, two beats race for the same fires and exactly one wins each.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

import pytest
import redis

from celery_dbeat.api import Schedules
from celery_dbeat.checks import Level, run_checks
from celery_dbeat.config import Settings, mask_url
from celery_dbeat.core.errors import ConfigurationError
from celery_dbeat.core.fires import FireKey, fire_lock_key
from celery_dbeat.locks.redis import RedisLock
from celery_dbeat.notify import ChangeListener, ChangeNotifier
from celery_dbeat.redis_client import create_client, describe_client
from celery_dbeat.store import migrate
from celery_dbeat.store.database import create_engine
from tests.integration.cli.conftest import Cli, make_app
from tests.integration.conftest import START
from tests.services import free_port, unavailable, unique_name

TTL = timedelta(seconds=30)
#: Enough fires that a cluster's keys land on every master.
KEYS = [FireKey(schedule_id, START) for schedule_id in range(1, 61)]
ACL_PREFIX = "dbeat-acl:"
MASTER_NAME = "dbeat-master"


# Disposable servers ------------------------------------------------------------------------------


def _binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        unavailable(name, "PATH", "not installed (Debian: apt-get install redis-server openssl)")
    assert path is not None
    return path


class ServerFailed(RuntimeError):
    """A ``redis-server`` exited at start-up; the message is the end of its log."""


@dataclass
class Servers:
    """Starts ``redis-server`` processes and stops every one of them at the end of the module."""

    root: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    by_port: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start(
        self,
        name: str,
        args: Callable[[int], Sequence[str]],
        *,
        with_bus: bool = False,
        **connection: Any,
    ) -> int:
        """Start ``redis-server *args(port)`` on a free port and wait until it answers ``PING``
        (through ``connection``: password, TLS files); return the port."""
        workdir = self.root / name
        workdir.mkdir()
        log = workdir / "server.log"
        for _attempt in range(5):
            port = free_port(with_bus=with_bus)
            with log.open("wb") as out:
                process = subprocess.Popen(
                    [_binary("redis-server"), *args(port)],
                    cwd=workdir,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            self.processes.append(process)

            def up(process: subprocess.Popen[bytes] = process, port: int = port) -> bool:
                if process.poll() is not None:
                    raise ServerFailed(log.read_text()[-1000:])
                return bool(_ask(port, "PING", **connection))

            try:
                _until(f"redis-server {name} on port {port}", up)
            except ServerFailed as exc:
                if "Address already in use" in str(exc):  # taken since it was chosen: next one
                    continue
                raise
            self.by_port[port] = process
            return port
        raise RuntimeError(f"no port found for redis-server {name}")

    def kill(self, port: int) -> None:
        """Kill the server on ``port`` as a crash would (SIGKILL)."""
        self.by_port[port].kill()
        self.by_port[port].wait(5)

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)


def _until(what: str, check: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except (redis.RedisError, OSError):
            pass
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _ask(port: int, *command: Any, **connection: Any) -> Any:
    """One command on a fresh connection, closed at once; answers decoded."""
    with redis.Redis("127.0.0.1", port, decode_responses=True, **connection) as client:
        return client.execute_command(*command)


def _fields(answer: Any) -> dict[str, Any]:
    """A Sentinel answer about one server as a dict: redis-py parses some (``SENTINEL MASTER``)
    into one, and leaves others (``SENTINEL REPLICAS`` before redis-py 5) as flat
    ``[key, value, ...]`` lists."""
    return answer if isinstance(answer, dict) else dict(zip(answer[::2], answer[1::2], strict=True))


_PLAIN = ("--save", "", "--appendonly", "no", "--bind", "127.0.0.1")


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    # A short base path: a Unix socket's path is limited to ~100 bytes.
    started = Servers(tmp_path_factory.mktemp("rt"))
    try:
        yield started
    finally:
        started.stop()


@dataclass
class Topology:
    """How beats reach one deployment: ``dbeat_redis_url`` and ``dbeat_redis_options``."""

    name: str
    url: str
    options: dict[str, Any]
    #: Whether ``CONFIG GET maxmemory*`` is allowed (not for a restricted ACL user).
    config_readable: bool = True
    prefix: str = ""


@pytest.fixture(scope="module")
def acl_server(servers: Servers) -> tuple[int, Path]:
    """A server with an ACL user ``dbeat`` limited to ``dbeat-acl:*`` keys and channels and
    without CONFIG; listening on TCP and on a Unix socket."""
    sock = servers.root / "acl.sock"
    unix = ("--unixsocket", str(sock), "--unixsocketperm", "700")
    port = servers.start("acl", lambda port: ("--port", str(port), *unix, *_PLAIN))
    rules = ("reset", "on", ">s3cret pw", f"~{ACL_PREFIX}*", f"&{ACL_PREFIX}*", "+@all")
    _ask(port, "ACL", "SETUSER", "dbeat", *rules, "-@dangerous")
    return port, sock


def _certificates(certs: Path) -> None:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, signed by the CA."""
    openssl = _binary("openssl")
    key = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], cwd=certs, check=True, capture_output=True)

    run("req", "-x509", *key, "-days", "1", "-subj", "/CN=dbeat-test-ca", *_files("ca", "-out"))
    for name, extension in (
        ("server", "subjectAltName=IP:127.0.0.1"),
        ("client", "extendedKeyUsage=clientAuth"),
    ):
        (certs / f"{name}.ext").write_text(f"{extension}\n")
        run("req", *key, "-subj", f"/CN={name}", *_files(name, "-out", ".csr"))
        sign = ("-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-extfile", f"{name}.ext")
        run("x509", "-req", "-in", f"{name}.csr", *sign, "-days", "1", "-out", f"{name}.crt")


def _files(name: str, out: str, suffix: str = ".crt") -> tuple[str, ...]:
    return ("-keyout", f"{name}.key", out, f"{name}{suffix}")


@pytest.fixture(scope="module")
def tls_server(servers: Servers) -> tuple[int, Path]:
    """A server on TLS only that requires a client certificate; returns its port and the
    directory of ``ca.crt``, ``client.crt`` and ``client.key``."""
    certs = servers.root / "certs"
    certs.mkdir()
    _certificates(certs)
    server = (
        *("--port", "0", "--tls-auth-clients", "yes"),
        *("--tls-cert-file", str(certs / "server.crt")),
        *("--tls-key-file", str(certs / "server.key")),
        *("--tls-ca-cert-file", str(certs / "ca.crt")),
        *_PLAIN,
    )
    try:
        files: Any = _tls_files(certs)
        port = servers.start(
            "tls", lambda port: ("--tls-port", str(port), *server), ssl=True, **files
        )
    except ServerFailed as exc:  # Debian's redis-server is built with TLS; others may not be
        unavailable("redis-server built with TLS", "--tls-port", exc)
    return port, certs


def _tls_files(certs: Path) -> dict[str, str]:
    return {
        "ssl_cert_reqs": "required",
        "ssl_ca_certs": str(certs / "ca.crt"),
        "ssl_certfile": str(certs / "client.crt"),
        "ssl_keyfile": str(certs / "client.key"),
    }


@dataclass
class SentinelGroup:
    """A master and a replica (password ``masterpw``) and one sentinel (password ``sentinelpw``)."""

    sentinel_port: int

    def ask(self, *command: Any) -> Any:
        return _ask(self.sentinel_port, "SENTINEL", *command, MASTER_NAME, password="sentinelpw")

    def master_port(self) -> int:
        """The master Sentinel gives clients. redis-py asks ``SENTINEL MASTERS``, which names the
        new master only once a failover is over (``GET-MASTER-ADDR-BY-NAME`` does it earlier)."""
        return int(_fields(self.ask("MASTER"))["port"])


@pytest.fixture(scope="module")
def sentinel_group(servers: Servers) -> SentinelGroup:
    common: tuple[str, ...] = ("--requirepass", "masterpw", "--masterauth", "masterpw", *_PLAIN)
    common += ("--repl-diskless-sync-delay", "0")
    master = servers.start(
        "master", lambda port: ("--port", str(port), *common), password="masterpw"
    )
    replica = servers.start(
        "replica",
        lambda port: ("--port", str(port), "--replicaof", "127.0.0.1", str(master), *common),
        password="masterpw",
    )
    _until(
        "the replica to sync",
        lambda: (
            _ask(replica, "INFO", "replication", password="masterpw")["master_link_status"] == "up"
        ),
    )

    def sentinel_conf(port: int) -> tuple[str, ...]:
        conf = servers.root / "sentinel" / "sentinel.conf"
        conf.write_text(
            f"port {port}\nbind 127.0.0.1\nrequirepass sentinelpw\n"
            f"sentinel monitor {MASTER_NAME} 127.0.0.1 {master} 1\n"
            f"sentinel auth-pass {MASTER_NAME} masterpw\n"
            f"sentinel down-after-milliseconds {MASTER_NAME} 1000\n"
            f"sentinel failover-timeout {MASTER_NAME} 5000\n"
        )
        return (str(conf), "--sentinel")

    group = SentinelGroup(servers.start("sentinel", sentinel_conf, password="sentinelpw"))

    def replica_known() -> bool:
        return any(
            (r["port"], r["flags"], r["master-link-status"]) == (str(replica), "slave", "ok")
            for r in map(_fields, group.ask("REPLICAS"))
        )

    _until("the sentinel to find the replica", replica_known)
    return group


@pytest.fixture(scope="module")
def cluster_ports(servers: Servers) -> list[int]:
    def node(port: int) -> tuple[str, ...]:
        cluster = ("--cluster-enabled", "yes", "--cluster-node-timeout", "2000")
        return ("--port", str(port), *cluster, "--cluster-config-file", "nodes.conf", *_PLAIN)

    ports = [servers.start(f"node-{n}", node, with_bus=True) for n in range(3)]
    nodes = [f"127.0.0.1:{port}" for port in ports]
    create = ("--cluster", "create", *nodes, "--cluster-replicas", "0", "--cluster-yes")
    subprocess.run([_binary("redis-cli"), *create], check=True, capture_output=True, timeout=30)
    for port in ports:

        def agreed(p: int = port) -> bool:
            return "cluster_state:ok" in _ask(p, "CLUSTER", "INFO")

        _until("the cluster to agree", agreed)
    return ports


def _sentinel_topology(group: SentinelGroup, prefix: str) -> Topology:
    url = (  # listed first, a sentinel that is down (nothing listens on port 1) is skipped
        f"sentinel://:masterpw@127.0.0.1:1;sentinel://:masterpw@127.0.0.1:{group.sentinel_port}/0"
    )
    options = {"master_name": MASTER_NAME, "sentinel_kwargs": {"password": "sentinelpw"}}
    return Topology("sentinel", url, options, prefix=prefix)


TOPOLOGIES = ["acl", "unix-acl", "tls-in-url", "tls-in-options", "sentinel", "cluster"]


@pytest.fixture(params=TOPOLOGIES)
def topology(request: pytest.FixtureRequest) -> Topology:
    name = request.param
    prefix = f"{unique_name('dbeat-t')}:"
    if name in ("acl", "unix-acl"):
        port, sock = request.getfixturevalue("acl_server")
        where = f"127.0.0.1:{port}/0" if name == "acl" else f"{sock}?db=0"
        scheme = "redis" if name == "acl" else "unix"
        url = f"{scheme}://dbeat:{quote('s3cret pw')}@{where}"
        return Topology(name, url, {}, config_readable=False, prefix=f"{ACL_PREFIX}{prefix}")
    if name.startswith("tls"):
        port, certs = request.getfixturevalue("tls_server")
        files = _tls_files(certs)
        if name == "tls-in-url":
            query = "&".join(f"{k}={quote(v, safe='')}" for k, v in files.items())
            return Topology(name, f"rediss://127.0.0.1:{port}/0?{query}", {}, prefix=prefix)
        return Topology(name, f"rediss://127.0.0.1:{port}/0", files, prefix=prefix)
    if name == "sentinel":
        return _sentinel_topology(request.getfixturevalue("sentinel_group"), prefix)
    ports = request.getfixturevalue("cluster_ports")
    return Topology(name, f"redis+cluster://127.0.0.1:{ports[1]}", {}, prefix=prefix)


@pytest.fixture
def make_lock() -> Iterator[Callable[[Topology, str], RedisLock]]:
    made: list[RedisLock] = []

    def make(topology: Topology, owner: str) -> RedisLock:
        made.append(
            RedisLock(topology.url, prefix=topology.prefix, owner=owner, options=topology.options)
        )
        return made[-1]

    yield make
    for lock in made:
        lock.close()


@pytest.fixture(scope="module")
def sqlite_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A migrated SQLite database for the module's checks and CLI runs (the topologies differ
    in Redis only)."""
    engine = create_engine(f"sqlite:///{tmp_path_factory.mktemp('db')}/s.sqlite3")
    migrate(engine)
    yield engine
    engine.dispose()


SECRETS = ("s3cret", "masterpw", "sentinelpw")


# Every topology ----------------------------------------------------------------------------------


def test_two_beats_racing_for_the_same_fires_win_each_exactly_once(
    topology: Topology, make_lock: Callable[[Topology, str], RedisLock]
) -> None:
    locks = [make_lock(topology, "beat-a"), make_lock(topology, "beat-b")]
    start = threading.Barrier(len(locks))
    won: dict[str, set[FireKey]] = {}

    def race(lock: RedisLock) -> None:
        start.wait()
        won[lock.owner] = lock.claim(KEYS, TTL)

    threads = [threading.Thread(target=race, args=(lock,)) for lock in locks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert not any(lock.degraded for lock in locks), "claims fell back to the database"
    assert won["beat-a"].isdisjoint(won["beat-b"])
    assert won["beat-a"] | won["beat-b"] == set(KEYS)
    assert [lock.claim(KEYS, TTL) for lock in locks] == [set(), set()]


def test_a_release_frees_only_the_owners_own_fires(
    topology: Topology, make_lock: Callable[[Topology, str], RedisLock]
) -> None:
    first, second, third = (make_lock(topology, f"beat-{n}") for n in (1, 2, 3))
    assert first.claim(KEYS, TTL) == set(KEYS)

    second.release(KEYS)  # not second's: left alone
    still_held = third.claim(KEYS, TTL)
    first.release(KEYS[:40])
    after_release = third.claim(KEYS, TTL)

    assert not any(lock.degraded for lock in (first, second, third))
    assert still_held == set()
    assert after_release == set(KEYS[:40])


def test_a_change_notification_reaches_a_listening_beat(topology: Topology) -> None:
    listener = ChangeListener(topology.url, prefix=topology.prefix, options=topology.options)
    notifier = ChangeNotifier(topology.url, prefix=topology.prefix, options=topology.options)
    timer = threading.Timer(0.2, notifier.notify)
    try:
        assert listener.wait(0.01) is False  # subscribes
        timer.start()
        assert listener.wait(10) is True
    finally:
        timer.cancel()
        notifier.close()
        listener.close()


def test_the_eviction_check_reads_the_servers_that_hold_lock_keys(
    topology: Topology, sqlite_engine: Any
) -> None:
    client = create_client(topology.url, topology.options)
    settings = Settings(redis_key_prefix=topology.prefix)  # where the ACL user may write
    try:
        (finding,) = [f for f in run_checks(settings, sqlite_engine, client) if f.topic == "redis"]
    finally:
        client.close()

    if not topology.config_readable:  # the ACL user may not run CONFIG: said, not crashed
        assert finding.level is Level.WARNING
        assert "could not read maxmemory-policy" in finding.message
    else:
        assert finding.level is Level.OK
        assert "maxmemory-policy noeviction" in finding.message
    if topology.name == "cluster":  # every master, by name
        assert finding.message.count("maxmemory-policy") == 3


def test_the_check_command_and_the_management_api_use_the_redis_options(
    topology: Topology, sqlite_engine: Any
) -> None:
    app = make_app(
        str(sqlite_engine.url),
        dbeat_redis_url=topology.url,
        dbeat_redis_options=topology.options,
        dbeat_redis_key_prefix=topology.prefix,
    )
    findings = json.loads(Cli(app).ok("check", "--json"))

    (redis_finding,) = [f for f in findings if f["topic"] == "redis"]
    assert redis_finding["level"] == ("ok" if topology.config_readable else "warning")
    with Schedules.from_app(app) as api:  # its notifier is built from the same options
        assert isinstance(api.notifier, ChangeNotifier)
        assert api.notifier.client is not None


def test_banners_and_logs_show_where_but_never_a_password(
    topology: Topology, make_lock: Callable[[Topology, str], RedisLock]
) -> None:
    lock = make_lock(topology, "beat-1")
    shown = [lock.describe(), mask_url(topology.url)]
    if lock.client is not None:
        shown.append(describe_client(lock.client))

    for text in shown:
        assert "127.0.0.1" in text or ".sock" in text, text
        assert not any(secret in text for secret in SECRETS), text


# One topology at a time --------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["tcp", "unix"])
def test_a_wrong_acl_password_degrades_the_lock_and_is_never_logged(
    acl_server: tuple[int, Path], where: str, caplog: pytest.LogCaptureFixture
) -> None:
    port, sock = acl_server
    url = f"redis://dbeat:s3cretX@127.0.0.1:{port}/0"
    if where == "unix":
        url = f"unix://dbeat:s3cretX@{sock}?db=0"
    lock = RedisLock(url, prefix=ACL_PREFIX, owner="beat-1")
    try:
        assert lock.claim(KEYS, TTL) == set(KEYS)  # every key: the database decides
        assert lock.degraded
    finally:
        lock.close()
    assert "WRONGPASS" in caplog.text or "invalid username-password" in caplog.text
    assert "s3cret" not in caplog.text


@pytest.mark.parametrize(
    "drop",
    [
        pytest.param("ssl_ca_certs", id="server-certificate-not-trusted"),
        pytest.param("ssl_certfile", id="no-client-certificate"),
    ],
)
def test_tls_is_verified_both_ways(
    tls_server: tuple[int, Path], drop: str, caplog: pytest.LogCaptureFixture
) -> None:
    port, certs = tls_server
    options = _tls_files(certs)
    del options[drop]
    if drop == "ssl_certfile":
        del options["ssl_keyfile"]
    lock = RedisLock(f"rediss://127.0.0.1:{port}/0", prefix="t:", owner="beat-1", options=options)
    try:
        assert lock.claim(KEYS, TTL) == set(KEYS)
        assert lock.degraded
    finally:
        lock.close()


def test_cluster_claims_spread_over_every_master_and_work_on_a_given_client(
    cluster_ports: list[int],
) -> None:
    prefix = f"{unique_name('dbeat-t')}:"
    client = create_client(f"redis+cluster://127.0.0.1:{cluster_ports[0]}")
    own = RedisLock(f"redis+cluster://127.0.0.1:{cluster_ports[2]}", prefix=prefix, owner="a")
    given = RedisLock(client, prefix=prefix, owner="b")
    try:
        cluster: Any = client
        nodes = {cluster.get_node_from_key(fire_lock_key(prefix, key)).name for key in KEYS}
        assert len(nodes) == 3, "the fires' keys should live on every master"
        assert own.claim(KEYS[::2], TTL) == set(KEYS[::2])
        assert given.claim(KEYS, TTL) == set(KEYS[1::2])
        given.release(KEYS)
        assert own.claim(KEYS, TTL) == set(KEYS[1::2])
        assert not own.degraded
        assert not given.degraded
        assert "redis+cluster://127.0.0.1:" in given.describe()
    finally:
        own.close()
        given.close()
        assert client.ping()  # a given client is left open
        client.close()


def test_unknown_schemes_and_misplaced_options_are_refused_naming_the_setting() -> None:
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("http://:s3cret@h:1", {}, "dbeat_redis_url"),
        ("redis://:s3cret@h:1;redis://h:2", {}, "dbeat_redis_url"),
        ("sentinel://:s3cret@h:26379", {}, "dbeat_redis_options['master_name']"),
        ("redis://:s3cret@h:1", {"ssl_ca_certs": "/ca.crt"}, "dbeat_redis_options['ssl_ca_certs']"),
        ("redis://:s3cret@h:1", {"ssl": True}, "dbeat_redis_options['ssl']"),
        ("rediss://:s3cret@h:1", {"ssl_ca_cert": "/typo"}, "dbeat_redis_options"),
        ("redis+cluster://:s3cret@h:7000/2", {}, "dbeat_redis_url"),
        ("redis://:s3cret@h:1?socket_timeout=soon", {}, "dbeat_redis_url"),
        ("redis://:s3cret@h:1?ssl_ca_certs=/ca.crt", {}, "dbeat_redis_url"),
        (
            "sentinel://:s3cret@h:26379",
            {"master_name": "m", "ssl_ca_certs": "/ca.crt"},
            "dbeat_redis_options['ssl_ca_certs']",
        ),
        (
            "sentinel://h:26379",
            {"master_name": "m", "min_other_sentinels": "1"},
            "dbeat_redis_options['min_other_sentinels']",
        ),
    ]
    for url, options, key in cases:
        with pytest.raises(ConfigurationError) as raised:
            create_client(url, options)
        assert raised.value.key == key, (url, options)
        assert "s3cret" not in str(raised.value)


def test_options_win_over_the_url_which_wins_over_the_callers_defaults() -> None:
    client = create_client(
        "redis://u:a;b@h:1/3?socket_timeout=5&health_check_interval=7",
        {"socket_timeout": 1},
        socket_timeout=9,
        socket_connect_timeout=9,
        health_check_interval=9,
    )
    assert isinstance(client, redis.Redis)
    kwargs = client.connection_pool.connection_kwargs
    assert (kwargs["socket_timeout"], kwargs["health_check_interval"]) == (1, 7)
    assert (kwargs["socket_connect_timeout"], kwargs["db"], kwargs["password"]) == (9, 3, "a;b")

    sentinel = create_client(
        "sentinel://:pw@s1:26379;sentinel://:pw@s2/2", {"master_name": "m"}, socket_timeout=2
    )
    assert describe_client(sentinel) == "sentinel://s1:26379;sentinel://s2:26379 (master 'm')"
    assert cast(Any, sentinel).connection_pool.connection_kwargs["db"] == 2


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        pytest.param(
            "sentinel://:pw@h1:26379;sentinel://:pw@h2:26379/0",
            "sentinel://:***@h1:26379;sentinel://:***@h2:26379/0",
            id="sentinel-list",
        ),
        pytest.param(
            "redis+cluster://u:pw@h:7000;redis+cluster://u:pw@h:7001",
            "redis+cluster://u:***@h:7000;redis+cluster://u:***@h:7001",
            id="cluster-list",
        ),
        pytest.param("unix://u:pw@/run/r.sock?db=0", "unix://u:***@/run/r.sock?db=0", id="unix"),
        pytest.param(
            "unix:///run/r.sock?db=0&password=pw",
            "unix:///run/r.sock?db=0&password=***",
            id="query",
        ),
        pytest.param(
            "rediss://u:pw@h:6380/0?ssl_cert_reqs=required&ssl_ca_certs=%2Fca.crt",
            "rediss://u:***@h:6380/0?ssl_cert_reqs=required&ssl_ca_certs=%2Fca.crt",
            id="tls-query-kept",
        ),
    ],
)
def test_redis_urls_of_every_form_are_masked(url: str, masked: str) -> None:
    assert mask_url(url) == masked


# Last: fails the Sentinel group's master over ----------------------------------------------------


def _claim_through_redis(lock: RedisLock, keys: list[FireKey]) -> set[FireKey]:
    """Claim once Redis answers again (a degraded lock grants everything without asking)."""
    probes = iter(range(10_000, 20_000))
    _until(
        "the lock to reach the new master",
        lambda: bool(lock.claim([FireKey(next(probes), START)], TTL)) and not lock.degraded,
        timeout=30,
    )
    won = lock.claim(keys, TTL)
    assert not lock.degraded
    return won


def test_after_the_master_dies_sentinel_fails_over_and_claims_and_notifications_resume(
    sentinel_group: SentinelGroup,
    servers: Servers,
    make_lock: Callable[[Topology, str], RedisLock],
) -> None:
    topology = _sentinel_topology(sentinel_group, f"{unique_name('dbeat-t')}:")
    first, second = make_lock(topology, "beat-a"), make_lock(topology, "beat-b")
    held = [FireKey(1, START)]
    assert first.claim(held, TTL) == set(held)
    assert second.claim(held, TTL) == set()
    old = sentinel_group.master_port()
    assert _ask(old, "WAIT", 1, 5000, password="masterpw") == 1  # the replica has the claim

    servers.kill(old)
    _until("the replica to be promoted", lambda: sentinel_group.master_port() != old, timeout=30)

    fresh = [FireKey(n, START) for n in range(2, 12)]
    assert _claim_through_redis(first, fresh) == set(fresh)
    assert _claim_through_redis(second, held + fresh) == set()  # held survived the failover
    test_a_change_notification_reaches_a_listening_beat(topology)
