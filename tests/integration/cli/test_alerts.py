"""The CLI's side of alerts: the alert options of ``add``/``update``/``show``, a bad value refused
naming its field, and the schedules in alert in ``status``."""

from __future__ import annotations

import json

from celery_dbeat.core.fires import RunStatus
from celery_dbeat.store import Store
from celery_dbeat.store.runs import RunEvent, record_runs
from tests.integration.cli.conftest import Cli, minutes, tick_fires, utc_now


def test_add_update_and_show_carry_the_alert_options(cli_any: Cli) -> None:
    cli_any.ok(
        "add", "report", "proj.tasks.report", "--every", "1h", "--alert-after-failures", "2",
        "--alert-deadline", "15m", "--alert-task", "proj.tasks.on_alert",
        "--alert-webhook", "https://hooks.example.com/dbeat",
    )  # fmt: skip
    shown = json.loads(cli_any.ok("show", "report", "--json"))
    assert {k: shown[k] for k in shown if k.startswith("alert_")} == {
        "alert_after_failures": 2,
        "alert_deadline": 900.0,
        "alert_task": "proj.tasks.on_alert",
        "alert_webhook": "https://hooks.example.com/dbeat",
        "alert_kind": None,
        "alert_episode": None,
    }
    cli_any.ok("update", "report", "--alert-webhook", "", "--alert-after-failures", "3")
    changed = json.loads(cli_any.ok("show", "report", "--json"))
    assert (changed["alert_webhook"], changed["alert_after_failures"]) == (None, 3)
    assert changed["next_run_at"] == shown["next_run_at"]


def test_a_webhook_that_is_not_an_http_url_is_refused_naming_the_field(cli: Cli) -> None:
    line = cli.fails(
        "add", "report", "proj.tasks.report", "--every", "1h",
        "--alert-webhook", "ftp://example.com/x", code=1,
        fragment="alert_webhook",
    )  # fmt: skip
    assert "'ftp://example.com/x'" in line
    assert "must be an http:// or https:// URL with a host" in line


def test_status_lists_the_schedules_in_alert(cli: Cli) -> None:
    now = utc_now()
    first, *_ = tick_fires(cli, now - minutes(3.5), now, "all")
    url = cli.app.conf.dbeat_database_url
    cli.ok("update", "tick", "--alert-after-failures", "1")
    store = Store(url)
    record_runs(store.engine, [RunEvent(first, RunStatus.FAILED, now, error="KeyError: 'day'")])
    store.close()

    data = json.loads(cli.ok("status", "--json"))
    lines = cli.ok("status").splitlines()

    [alert] = data["in_alert"]
    assert (alert["name"], alert["task"], alert["kind"]) == ("tick", "proj.tasks.tick", "failing")
    at = lines.index("alerts     1 schedule(s) in alert")
    assert lines[at + 1].split() == ["NAME", "KIND", "SINCE", "SLOT", "(UTC)", "TASK"]
    assert lines[at + 2].split() == ["tick", "failing", alert["episode"], "proj.tasks.tick"]
