"""A beat delivers each alert at least once, under its stable id, to the schedule's task and to a
webhook (a real HTTP server on this host): a failed delivery is retried with a growing delay and
given up after ``dbeat_alert_retries`` with its reason; a slow webhook never holds up a tick."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

import pytest
import sqlalchemy as sa

from celery_dbeat.beat.ticker import Ticker
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.alerts import alert_id
from celery_dbeat.core.definitions import Definition
from celery_dbeat.core.fires import RunStatus
from celery_dbeat.core.specs import Cron
from celery_dbeat.store import Store
from celery_dbeat.store.models import Alert
from celery_dbeat.store.runs import RunEvent, record_runs
from tests.integration.conftest import F, MakeTicker, Tables, at

AL = cast(sa.Table, Alert.__table__)


class Receiver(ThreadingHTTPServer):
    """A webhook: answers each POST with the next of ``statuses`` (then 200), or, while
    ``hold`` is clear, not at all; keeps each request's headers and JSON body."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.statuses: list[int] = []
        self.received: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.hold = threading.Event()
        self.hold.set()
        self.arrived = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/hook"


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.received.append((dict(self.headers), body))
        self.server.arrived.set()
        self.server.hold.wait(30)
        status = self.server.statuses.pop(0) if self.server.statuses else 200
        self.send_response(status)
        self.end_headers()

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.hold.set()
    server.shutdown()
    server.server_close()


def failing_schedule(store: Store, tables: Tables, **fields: Any) -> str:
    """A schedule whose 10:00 run failed with ``alert_after_failures=1``; its alert id."""
    definition = Definition.create(
        name="report",
        task="tasks.report",
        schedule=Cron("0 * * * *"),
        alert_after_failures=1,
        **fields,
    )
    tables.sync([definition], at("09:30"))
    row = tables.row("report")
    with store.engine.begin() as conn:
        conn.execute(
            sa.insert(F).values(
                schedule_id=row.id,
                slot=at("10:00"),
                manual=False,
                status="sent",
                slot_count=1,
                task_id="t10",
                recorded_at=at("10:00"),
                attempts=0,
            )
        )
    error = "OSError: disk full"
    record_runs(store.engine, [RunEvent("t10", RunStatus.FAILED, at("10:01"), error=error)])
    return alert_id(row.uid, "failing", at("10:00"))


def deliver(ticker: Ticker, clock: FixedClock, when: datetime) -> None:
    clock.set(when)
    ticker.alerts.step(when)
    assert ticker.alerts.wait_idle(30)


def delivery(store: Store) -> tuple[Any, ...]:
    query = sa.select(AL.c.attempts, AL.c.delivered_at, AL.c.gave_up_at, AL.c.last_error)
    with store.engine.connect() as conn:
        return tuple(conn.execute(query).one())


def test_an_alert_goes_to_its_task_and_its_webhook_with_one_id_retried_until_delivered(
    store: Store, tables: Tables, clock: FixedClock, make_ticker: MakeTicker, receiver: Receiver
) -> None:
    expected_id = failing_schedule(store, tables, alert_task="tasks.on_alert")
    ticker = make_ticker(alert_webhook=receiver.url)
    sent: list[tuple[str, dict[str, Any], str]] = []
    ticker.alerts.send_task = lambda task, kwargs, id_: sent.append((task, kwargs, id_))
    receiver.statuses = [500, 503]
    deliver(ticker, clock, at("10:02"))
    deliver(ticker, clock, at("10:02:09"))  # the first retry waits 10 s
    assert len(receiver.received) == 1
    deliver(ticker, clock, at("10:02:10"))
    deliver(ticker, clock, at("10:02:30"))  # the second 20 s
    assert delivery(store) == (3, at("10:02:30"), None, None)
    deliver(ticker, clock, at("11:00"))
    assert len(receiver.received) == 3  # delivered: not again
    assert {h["Idempotency-Key"] for h, _ in receiver.received} == {expected_id}
    headers, body = receiver.received[-1]
    assert headers["Content-Type"] == "application/json"
    assert body == {
        "alert_id": expected_id,
        "kind": "failing",
        "schedule": "report",
        "schedule_uid": tables.row("report").uid,
        "episode": "2024-05-06T10:00:00Z",
        "slot": "2024-05-06T10:00:00Z",
        "error": "OSError: disk full",
        "failures": 1,
        "raised_at": "2024-05-06T10:01:00Z",
    }
    # The task was sent at each attempt (the webhook failed), always under the alert's id.
    assert [(task, id_) for task, _, id_ in sent] == [("tasks.on_alert", expected_id)] * 3
    assert sent[0][1] == body


def test_a_webhook_that_does_not_answer_holds_up_no_tick(
    store: Store, tables: Tables, clock: FixedClock, make_ticker: MakeTicker, receiver: Receiver
) -> None:
    failing_schedule(store, tables, alert_webhook=receiver.url)
    ticker = make_ticker(alert_webhook_timeout=60, alert_retries=0)
    receiver.hold.clear()  # the receiver answers only when told to, the beat waits up to 60 s
    clock.set(at("10:02"))
    ticker.tick()  # housekeeping leases the alert and hands it to the delivery thread
    assert receiver.arrived.wait(30)
    assert not ticker.alerts.wait_idle(0)  # the tick is over; the delivery still waits
    assert delivery(store)[:3] == (1, None, None)  # leased: one attempt, not yet delivered
    receiver.hold.set()
    assert ticker.alerts.wait_idle(30)
    assert delivery(store) == (1, at("10:02"), None, None)


def test_a_webhook_that_times_out_is_given_up_with_the_reason(
    store: Store, tables: Tables, clock: FixedClock, make_ticker: MakeTicker, receiver: Receiver
) -> None:
    failing_schedule(store, tables, alert_webhook=receiver.url)
    ticker = make_ticker(alert_webhook_timeout=0.2, alert_retries=0)
    receiver.hold.clear()
    deliver(ticker, clock, at("10:02"))
    attempts, delivered, gave_up, error = delivery(store)
    assert (attempts, delivered, gave_up) == (1, None, at("10:02"))
    assert f"webhook {receiver.url}: " in error
    assert "timed out" in error


def test_an_alert_with_nowhere_to_go_is_given_up_saying_so(
    store: Store, tables: Tables, clock: FixedClock, make_ticker: MakeTicker
) -> None:
    failing_schedule(store, tables)
    ticker = make_ticker(alert_retries=0)
    deliver(ticker, clock, at("10:02"))
    assert delivery(store)[2:] == (
        at("10:02"),
        "nowhere to deliver it: set alert_task or alert_webhook",
    )
