"""The Redis client of locks, change notifications and checks: one URL and a dict of options.

Every Redis connection celery-dbeat opens is built here, from ``dbeat_redis_url`` and
``dbeat_redis_options``: one server (``redis://``, ``rediss://`` for TLS, ``unix://``), Sentinel
(``sentinel://h1:26379;sentinel://h2:26379/0``, as Celery and kombu spell it, ``master_name`` in
the options) or Redis Cluster (``redis+cluster://``, ``rediss+cluster://`` for TLS); the
configuration guide (``docs/how-to/configuration.md``) shows each.

The URL's query takes redis-py's connection arguments (``ssl_ca_certs``, ``socket_timeout``, ...);
the options take the same arguments and win over the query. A Sentinel URL's credentials, ``db``
and query are the master's; ``sentinel_kwargs`` (the sentinels' own password or TLS) and
``min_other_sentinels`` go to :class:`redis.sentinel.Sentinel`, and ``ssl: True`` puts the master
connections on TLS. Cluster is a scheme rather than an option because the topology decides which
client can talk to the server at all, and the URL is the value operators move between hosts.

A failed command is retried once, at once (``retry`` in the options changes that): redis-py 6+
would retry ten times with backoff, stalling a tick for seconds while the lock's database fallback
is ready to take over.

A Redis that cannot be reached is an outage, which the lock degrades through; a Redis that refuses
the credentials or the commands celery-dbeat needs (:func:`is_refused`) is a configuration error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias, Union
from urllib.parse import urlsplit

from .config import mask_url
from .core.errors import ConfigurationError
from .core.urls import CUT_PASSWORD, cuts_password

try:
    import redis
    from redis.backoff import NoBackoff
    from redis.cluster import ClusterNode, RedisCluster
    from redis.connection import parse_url
    from redis.exceptions import (
        AuthenticationError,
        AuthenticationWrongNumberOfArgsError,
        NoPermissionError,
        RedisClusterException,
    )
    from redis.retry import Retry
    from redis.sentinel import MasterNotFoundError, Sentinel, SentinelConnectionPool
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "Redis support needs the redis client: pip install 'celery-dbeat[redis]'"
    ) from exc

__all__ = [
    "UNAVAILABLE",
    "RedisClient",
    "check_url",
    "close_client",
    "create_client",
    "describe_client",
    "is_cluster",
    "is_refused",
]

RedisClient: TypeAlias = Union["redis.Redis[Any]", "RedisCluster[Any]"]

#: What a Redis call raises when Redis cannot answer (a cluster without a reachable node raises
#: :class:`~redis.exceptions.RedisClusterException`, which is not a ``RedisError``).
UNAVAILABLE: tuple[type[Exception], ...] = (redis.RedisError, RedisClusterException)

#: What Redis answers a client it will not serve as configured: wrong or missing credentials, an
#: ACL user without a command, key or channel celery-dbeat uses.
_REFUSALS = (AuthenticationError, AuthenticationWrongNumberOfArgsError, NoPermissionError)


def is_refused(exc: BaseException) -> bool:
    """Redis refused these credentials or this user's rights: a configuration error that
    retrying does not fix, unlike an outage. A cluster client raises an error of its own caused
    by the node's answer; a Sentinel client names each sentinel's in its message."""
    seen: BaseException | None = exc
    for _ in range(10):  # a cause chain is short; never loop on a cycle
        if seen is None:
            return False
        if isinstance(seen, _REFUSALS):
            return True
        if isinstance(seen, MasterNotFoundError):
            return any(f"{kind.__name__}(" in str(seen) for kind in _REFUSALS)
        seen = seen.__cause__ or seen.__context__
    return False


#: Our URL schemes, and the one redis-py's URL parser knows for each.
_SCHEMES = {
    "redis": "redis",
    "rediss": "rediss",
    "unix": "unix",
    "sentinel": "redis",
    "redis+cluster": "redis",
    "rediss+cluster": "rediss",
}
_SOCKET_TIMEOUTS = ("socket_timeout", "socket_connect_timeout")


def check_url(url: str, *, setting: str = "dbeat_redis_url") -> tuple[str, list[dict[str, Any]]]:
    """The scheme of ``url`` and redis-py's reading of each server's URL in it; raises
    :class:`~celery_dbeat.core.errors.ConfigurationError` (naming ``setting``, the URL masked)
    unless :func:`create_client` can read ``url``. No I/O."""
    # Only a list of URLs is split: a single URL's password may hold a ';'.
    parts = url.split(";") if url.count("://") > 1 else [url]
    schemes = {part.partition("://")[0].lower() for part in parts}
    if len(schemes) != 1 or not schemes <= _SCHEMES.keys() or "://" not in url:
        raise ConfigurationError(
            setting,
            mask_url(url),
            "must start with redis://, rediss://, unix://, sentinel:// or redis+cluster:// "
            "(rediss+cluster:// for TLS); only sentinel:// and cluster URLs may list several "
            "servers, separated by ';'",
        )
    (scheme,) = schemes
    if len(parts) > 1 and scheme not in ("sentinel", "redis+cluster", "rediss+cluster"):
        raise ConfigurationError(setting, mask_url(url), "lists several servers")
    return scheme, [_parse(part, _SCHEMES[scheme], setting) for part in parts]


def create_client(
    url: str,
    options: Mapping[str, Any] | None = None,
    *,
    setting: str = "dbeat_redis_url",
    **defaults: Any,
) -> RedisClient:
    """A client for ``url``; ``defaults`` are the caller's (timeouts) and lose to URL and options.

    Raises :class:`~celery_dbeat.core.errors.ConfigurationError` for a URL or option redis-py would
    refuse, naming ``setting`` (the key the URL came from). Only a cluster client talks to the
    server here (redis-py reads the slot map when it is built), so only a cluster URL can raise
    one of :data:`UNAVAILABLE`.
    """
    options = dict(options or {})
    scheme, parsed = check_url(url, setting=setting)
    # Later URLs repeat or complete the first (``sentinel://h1;sentinel://h2/0`` names db 0).
    kwargs: dict[str, Any] = {"retry": Retry(NoBackoff(), 1), **defaults}
    for part in parsed:
        kwargs.update({k: v for k, v in part.items() if k not in ("host", "port")})
    if scheme == "sentinel":
        return _sentinel(url, parsed, kwargs, options, setting)
    kwargs.update(options)
    tls = kwargs.get("connection_class") is redis.SSLConnection
    _check_tls(tls, kwargs, options, "a rediss:// URL", setting)
    if scheme.endswith("+cluster"):
        return _cluster(url, parsed, kwargs, setting)
    kwargs.update({k: v for k, v in parsed[0].items() if k in ("host", "port")})
    kwargs.pop("ssl", None)  # said by the scheme
    pool = redis.ConnectionPool(**kwargs)
    _check_arguments(pool, options)
    return redis.Redis(connection_pool=pool)


def close_client(client: RedisClient) -> None:
    """Close a client :func:`create_client` built: its pool and, for Sentinel, the sentinels'."""
    client.close()
    if isinstance(client, RedisCluster):
        return
    pool = client.connection_pool
    pool.disconnect()
    if isinstance(pool, SentinelConnectionPool):
        for sentinel in pool.sentinel_manager.sentinels:
            sentinel.close()
            sentinel.connection_pool.disconnect()


def is_cluster(client: object) -> bool:
    return isinstance(client, RedisCluster)


def describe_client(client: RedisClient) -> str:
    """Where ``client`` points, as a URL without credentials, for banners and logs."""
    if isinstance(client, RedisCluster):
        nodes = ";".join(f"redis+cluster://{node.name}" for node in client.get_nodes()[:3])
        return nodes or "redis+cluster://?"
    pool = client.connection_pool
    if isinstance(pool, SentinelConnectionPool):
        sentinels = ";".join(
            f"sentinel://{s.connection_pool.connection_kwargs.get('host', '?')}:"
            f"{s.connection_pool.connection_kwargs.get('port', '?')}"
            for s in pool.sentinel_manager.sentinels
        )
        return f"{sentinels} (master {pool.service_name!r})"
    kwargs = pool.connection_kwargs
    if "path" in kwargs:
        return f"unix://{kwargs['path']}?db={kwargs.get('db', 0)}"
    scheme = "rediss" if issubclass(pool.connection_class, redis.SSLConnection) else "redis"
    return f"{scheme}://{kwargs.get('host', '?')}:{kwargs.get('port', '?')}/{kwargs.get('db', 0)}"


def _parse(part: str, scheme: str, setting: str) -> dict[str, Any]:
    # redis-py's own parser, on each server's URL with our scheme swapped for the one it knows.
    # Neither its errors nor the driver's may show a part of a password cut in two (a port or a
    # host name read from it): such a URL is refused first.
    rest = part.partition("://")[2]
    if cuts_password(part):
        raise ConfigurationError(setting, mask_url(part), CUT_PASSWORD)
    unreadable = (
        "redis-py cannot read it as a URL (is its port a number?); write "
        "redis://[user:password@]host[:port][/db], with any '@', '/', '?' or '#' in the password "
        "percent-encoded (urllib.parse.quote(password, safe=''))"
    )
    try:
        split = urlsplit(f"{scheme}://{rest}")
    except ValueError:  # an unclosed '[' of an IPv6 address
        raise ConfigurationError(setting, mask_url(part), unreadable) from None
    if "@" not in split.netloc and ":" in split.netloc and "@" in rest[len(split.netloc) :]:
        # A raw '/', '?' or '#' in the password ends the server's address there: the start of
        # the password would be read as a port (and shown in redis-py's error) or a host name.
        raise ConfigurationError(
            setting,
            mask_url(part),
            "the password (or another part before the '@') holds a '/', '?' or '#', which ends "
            "it early in a URL; percent-encode it (urllib.parse.quote(password, safe='')), and "
            "any '@' after the host",
        )
    try:
        split.port  # noqa: B018 - read for its ValueError, whose message would quote the port
    except ValueError:
        raise ConfigurationError(setting, mask_url(part), unreadable) from None
    try:
        return parse_url(f"{scheme}://{rest}")
    except ValueError as exc:
        raise ConfigurationError(setting, mask_url(part), str(exc)) from None


def _check_tls(
    tls: bool, kwargs: Mapping[str, Any], options: Mapping[str, Any], how: str, url_setting: str
) -> None:
    """Refuse TLS arguments (from the URL's query or the options) for a connection without TLS,
    which redis-py would only refuse at the first command, with a ``TypeError``."""
    if tls:
        return
    for key, value in kwargs.items():
        if (key.startswith("ssl_") and value is not None) or (key == "ssl" and value):
            setting = f"dbeat_redis_options[{key!r}]" if key in options else url_setting
            shown = "***" if "password" in key else value
            raise ConfigurationError(setting, shown, f"TLS needs {how}")


def _check_arguments(pool: redis.ConnectionPool, options: Mapping[str, Any]) -> None:
    # A misspelt argument would otherwise surface as a TypeError at the first command, inside a
    # tick. Building a connection object opens no socket.
    try:
        pool.connection_class(**pool.connection_kwargs)
    except TypeError as exc:
        raise ConfigurationError(
            "dbeat_redis_options", sorted(options), f"not a redis-py connection argument: {exc}"
        ) from None


def _sentinel(
    url: str,
    parsed: list[dict[str, Any]],
    kwargs: dict[str, Any],
    options: dict[str, Any],
    setting: str,
) -> redis.Redis[Any]:
    master_name = options.pop("master_name", None)
    if not master_name or not isinstance(master_name, str):
        raise ConfigurationError(
            "dbeat_redis_options['master_name']",
            master_name,
            f"a Sentinel URL ({mask_url(url)}) needs the name of the monitored master",
        )
    sentinel_kwargs = dict(options.pop("sentinel_kwargs", None) or {})
    min_other = options.pop("min_other_sentinels", 0)
    if isinstance(min_other, bool) or not isinstance(min_other, int) or min_other < 0:
        raise ConfigurationError(
            "dbeat_redis_options['min_other_sentinels']", min_other, "must be a whole number >= 0"
        )
    kwargs.update(options)
    kwargs.pop("connection_class", None)  # the Sentinel pool picks it (``ssl`` for TLS)
    tls = bool(kwargs.get("ssl"))
    _check_tls(tls, kwargs, options, "'ssl': True in dbeat_redis_options", setting)
    for name in _SOCKET_TIMEOUTS:  # reaching a sentinel should not take longer than the master
        if name in kwargs:
            sentinel_kwargs.setdefault(name, kwargs[name])
    # A sentinel that is down is skipped for the next one in the list, at once.
    sentinel_kwargs.setdefault("retry", Retry(NoBackoff(), 0))
    addresses = [(p.get("host", "localhost"), int(p.get("port", 26379))) for p in parsed]
    sentinel = Sentinel(
        addresses, min_other_sentinels=min_other, sentinel_kwargs=sentinel_kwargs, **kwargs
    )
    client = sentinel.master_for(master_name)
    _check_arguments(client.connection_pool, options)
    return client


def _cluster(
    url: str, parsed: list[dict[str, Any]], kwargs: dict[str, Any], setting: str
) -> RedisCluster[Any]:
    if kwargs.pop("db", 0) not in (0, None):
        raise ConfigurationError(setting, mask_url(url), "Redis Cluster has only database 0")
    if kwargs.pop("connection_class", None) is redis.SSLConnection:
        kwargs["ssl"] = True
    nodes = [ClusterNode(p.get("host", "localhost"), int(p.get("port", 6379))) for p in parsed]
    return RedisCluster(startup_nodes=nodes, **kwargs)
