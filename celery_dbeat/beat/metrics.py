"""Prometheus metrics of a beat (``pip install 'celery-dbeat[metrics]'``, ``dbeat_metrics_port``).

The ticker reports through :class:`Metrics`; without a port it is :data:`NO_METRICS`, whose
methods do nothing, so the hot path never checks whether metrics are on.

==================================================  =========================================
``dbeat_fires_total{outcome}``                      fires by outcome: ``sent``, ``skipped``,
                                                    ``dropped``, ``overlap``, ``buffered``,
                                                    ``queued`` (catch-up waiting for spare
                                                    capacity), ``publish_error`` (an attempt),
                                                    ``failed`` (given up), ``recovered`` (sent
                                                    for another beat)
``dbeat_fire_lag_seconds``                          histogram: broker publish time minus slot
``dbeat_lock_claims_total{result}``                 per-fire lock claims ``won`` / ``lost``
``dbeat_tick_duration_seconds``                     histogram: one tick's work
``dbeat_due_backlog``                               schedules due now and not yet handled
``dbeat_behind_seconds``                            how late the oldest on-time fire still due
                                                    is when a tick ends (0: keeping up)
``dbeat_queued_fires``                              catch-up and backfill fires waiting for
                                                    spare capacity
``dbeat_errors_total{component}``                   ``database`` failures, ``redis`` claims
                                                    made without Redis (it was unreachable),
                                                    ``schedule``: a schedule set aside because
                                                    the database refused its write
``dbeat_paused_schedules{source}``                  schedules paused now, by what paused
                                                    them: ``person``, ``config`` (beat_schedule),
                                                    ``failures`` (``pause_after_failures``),
                                                    ``unknown`` (paused before 0010); the same
                                                    count on every beat
``dbeat_schedule_last_success_timestamp_seconds``   per schedule, when a run last succeeded
  ``{schedule}``                                    (needs the worker hook)
``dbeat_alerts_total{kind,outcome}``                alerts (``failing``, ``missed``,
                                                    ``recovered``) by what this beat did:
                                                    ``raised`` (a missed deadline it found),
                                                    ``delivered``, ``retry``, ``gave_up``
``dbeat_schedules_in_alert{kind}``                  schedules in alert now, by the kind of
                                                    episode; the same count on every beat
``dbeat_beat_info{instance,version}``               1, for joining the above with a beat
==================================================  =========================================
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from celery.utils.log import get_logger

from .._version import __version__
from ..core.errors import ConfigurationError

__all__ = ["NO_METRICS", "Metrics", "PrometheusMetrics", "start_metrics_server"]

logger = get_logger(__name__)

_LAG_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 3600)
_TICK_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


class Metrics:
    """What the ticker reports. This base class ignores everything."""

    enabled = False

    def fires(self, outcome: str, count: int = 1) -> None:
        pass

    def lag(self, seconds: float) -> None:
        pass

    def claims(self, won: int, lost: int) -> None:
        pass

    def tick(self, seconds: float) -> None:
        pass

    def backlog(self, due: int) -> None:
        pass

    def behind(self, seconds: float) -> None:
        pass

    def queued(self, count: int) -> None:
        pass

    def error(self, component: str, count: int = 1) -> None:
        pass

    def succeeded(self, schedule: str, at: datetime) -> None:
        pass

    def paused(self, counts: Mapping[str, int]) -> None:
        pass

    def alert(self, kind: str, outcome: str) -> None:
        pass

    def in_alert(self, counts: Mapping[str, int]) -> None:
        pass


NO_METRICS = Metrics()


class PrometheusMetrics(Metrics):
    """Metrics in ``prometheus_client``'s default registry (one set per process)."""

    enabled = True

    def __init__(self, instance: str) -> None:
        m = _collectors()
        self._m = m
        m["info"].labels(instance=instance, version=__version__).set(1)

    def fires(self, outcome: str, count: int = 1) -> None:
        if count:
            self._m["fires"].labels(outcome=outcome).inc(count)

    def lag(self, seconds: float) -> None:
        self._m["lag"].observe(max(seconds, 0.0))

    def claims(self, won: int, lost: int) -> None:
        if won:
            self._m["claims"].labels(result="won").inc(won)
        if lost:
            self._m["claims"].labels(result="lost").inc(lost)

    def tick(self, seconds: float) -> None:
        self._m["tick"].observe(seconds)

    def backlog(self, due: int) -> None:
        self._m["backlog"].set(due)

    def behind(self, seconds: float) -> None:
        self._m["behind"].set(max(seconds, 0.0))

    def queued(self, count: int) -> None:
        self._m["queued"].set(count)

    def error(self, component: str, count: int = 1) -> None:
        if count:
            self._m["errors"].labels(component=component).inc(count)

    def succeeded(self, schedule: str, at: datetime) -> None:
        self._m["success"].labels(schedule=schedule).set(at.timestamp())

    def paused(self, counts: Mapping[str, int]) -> None:
        for source, count in counts.items():
            self._m["paused"].labels(source=source).set(count)

    def alert(self, kind: str, outcome: str) -> None:
        self._m["alerts"].labels(kind=kind, outcome=outcome).inc()

    def in_alert(self, counts: Mapping[str, int]) -> None:
        for kind in ("failing", "missed"):
            self._m["in_alert"].labels(kind=kind).set(counts.get(kind, 0))


@functools.cache
def _collectors() -> dict[str, Any]:
    # Registered once per process: a second registration of a name raises in prometheus_client.
    from prometheus_client import Counter, Gauge, Histogram

    return {
        "fires": Counter("dbeat_fires", "Fires by outcome.", ["outcome"]),
        "lag": Histogram(
            "dbeat_fire_lag_seconds",
            "Time from a fire's slot to its publish.",
            buckets=_LAG_BUCKETS,
        ),
        "claims": Counter("dbeat_lock_claims", "Per-fire lock claims.", ["result"]),
        "tick": Histogram(
            "dbeat_tick_duration_seconds", "Duration of one tick's work.", buckets=_TICK_BUCKETS
        ),
        "backlog": Gauge("dbeat_due_backlog", "Schedules due now and not yet handled."),
        "behind": Gauge(
            "dbeat_behind_seconds", "How late the oldest on-time fire still due is (0: keeping up)."
        ),
        "queued": Gauge("dbeat_queued_fires", "Catch-up and backfill fires waiting to be sent."),
        "errors": Counter("dbeat_errors", "Database and Redis errors.", ["component"]),
        "success": Gauge(
            "dbeat_schedule_last_success_timestamp_seconds",
            "Unix time a schedule's run last succeeded (reported by the worker hook).",
            ["schedule"],
        ),
        "paused": Gauge(
            "dbeat_paused_schedules", "Schedules paused now, by what paused them.", ["source"]
        ),
        "alerts": Counter("dbeat_alerts", "Alerts by kind and outcome.", ["kind", "outcome"]),
        "in_alert": Gauge("dbeat_schedules_in_alert", "Schedules in alert now.", ["kind"]),
        "info": Gauge("dbeat_beat_info", "This beat.", ["instance", "version"]),
    }


def start_metrics_server(port: int, address: str, instance: str) -> PrometheusMetrics:
    """Serve ``/metrics`` on ``address:port`` from a daemon thread; return the metrics."""
    try:
        from prometheus_client import start_http_server
    except ImportError:
        raise ConfigurationError(
            "dbeat_metrics_port",
            port,
            "needs prometheus_client: pip install 'celery-dbeat[metrics]'",
        ) from None
    metrics = PrometheusMetrics(instance)
    try:
        start_http_server(port, addr=address)
    except OSError as exc:
        raise ConfigurationError(
            "dbeat_metrics_port", port, f"cannot listen on {address}:{port}: {exc}"
        ) from None
    logger.info("dbeat: Prometheus metrics on http://%s:%d/metrics", address, port)
    return metrics
